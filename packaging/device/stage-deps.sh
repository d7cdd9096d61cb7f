#!/usr/bin/env bash
# Copies the dependencies a GPU host may lack into <repo>/.deps (ignored by git), from this Debian
# machine's packages, so that the worker builds there without a network:
#   header-only: toml++, nlohmann/json, CLI11      -> .deps/{toml++,nlohmann,CLI}
#   GoogleTest sources                             -> .deps/googletest
#   SQLite and zlib headers (+ their shared libraries, used only where the host has none)
#                                                  -> .deps/{sqlite3,zlib}/{include,lib}
# Then CMake takes them with -DPARALLAX_THIRD_PARTY=<repo>/.deps (packaging/device/run.sh does).
#
#   packaging/device/stage-deps.sh            # needs: libtomlplusplus-dev nlohmann-json3-dev
#                                             #        libcli11-dev googletest libsqlite3-dev zlib1g-dev
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out="$repo/.deps"

need() {
  [ -e "$1" ] || { echo "stage-deps: $1 is missing; install $2 (packaging/deps.sh installs it)" >&2; exit 1; }
}
need /usr/include/toml++/toml.h libtomlplusplus-dev
need /usr/include/nlohmann/json.hpp nlohmann-json3-dev
need /usr/include/CLI/CLI.hpp libcli11-dev
need /usr/src/googletest/CMakeLists.txt googletest
need /usr/include/sqlite3.h libsqlite3-dev
need /usr/include/zlib.h zlib1g-dev

rm -rf "$out"
mkdir -p "$out/sqlite3/include" "$out/sqlite3/lib" "$out/zlib/include" "$out/zlib/lib"
cp -a /usr/include/toml++ /usr/include/nlohmann /usr/include/CLI "$out/"
cp -a /usr/src/googletest "$out/googletest"
cp /usr/include/sqlite3.h /usr/include/sqlite3ext.h "$out/sqlite3/include/"
cp /usr/include/zlib.h /usr/include/zconf.h "$out/zlib/include/"
# The real files under their sonames: a link would travel as a link, or not at all.
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
cp -L "/usr/lib/$multiarch/libsqlite3.so.0" "$out/sqlite3/lib/libsqlite3.so.0"
cp -L "/usr/lib/$multiarch/libz.so.1" "$out/zlib/lib/libz.so.1"

{
  echo "Staged by packaging/device/stage-deps.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ) from:"
  dpkg-query -W -f='  ${Package} ${Version}\n' libtomlplusplus-dev nlohmann-json3-dev libcli11-dev googletest \
    libsqlite3-dev zlib1g-dev 2>/dev/null || true
} > "$out/STAGED.txt"
echo "stage-deps: $(du -sh "$out" | cut -f1) in $out"
