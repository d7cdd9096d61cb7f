#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace parallax::testing {

// Writes into `folder` (created) the files transformers saves for a Qwen2Tokenizer with the vocabulary,
// merges and added tokens of `tokenizerJson` (a tokenizer.json): vocab.json, merges.txt (a
// "#version: 0.2" line, then "a b" a line) and tokenizer_config.json (tokenizer_class Qwen2Tokenizer,
// added_tokens_decoder, and <|endoftext|> as eos and pad token where it is an added token).
void writeQwen2TokenizerFolder(const nlohmann::json& tokenizerJson, const std::string& folder);

} // namespace parallax::testing
