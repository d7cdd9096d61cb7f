#pragma once

// The files of a tokenizer folder that has no tokenizer.json: transformers' Qwen2Tokenizer (and
// Qwen2TokenizerFast) saved as vocab.json, merges.txt and tokenizer_config.json, as Qwen-Image's
// diffusers folders ship their tokenizer/. Read into the tokenizer.json that transformers'
// conversion to the fast tokenizer gives, which the tokenizer.json reader then checks and runs.
// Used by Tokenizer.cpp (and its tests).

#include <string>

namespace parallax {

// The pre-tokenizer expression of Qwen2Tokenizer (its Split, behavior Isolated), as a tokenizer.json
// writes it.
extern const char* const kQwen2SplitPattern;

// The bytes of one tokenizer file; TokenizerError naming it when it cannot be read or is over 1 GiB.
std::string readTokenizerFile(const std::string& file);

// Whether `folder` holds any of vocab.json, merges.txt, tokenizer_config.json.
bool hasTokenizerFiles(const std::string& folder);

// The tokenizer.json equivalent to the Qwen2Tokenizer files of `folder`:
//   model          BPE: vocab.json (an object of token: integer id) and merges.txt (one merge a line,
//                  two tokens separated by a space; a first line "#version..." and blank lines are
//                  skipped; a merge repeated keeps its first rank), no unk token, no dropout, empty
//                  continuing_subword_prefix and end_of_word_suffix, byte_fallback false;
//   normalizer     NFC;
//   pre_tokenizer  Split(kQwen2SplitPattern, Isolated) then ByteLevel without its regex or a prefix space;
//   decoder        ByteLevel;
//   added tokens   tokenizer_config.json's added_tokens_decoder ({"id": {content, flags}}), flags as
//                  written (AddedToken's defaults where one is left out: false, normalized = !special).
//                  Without it, added_tokens.json ({content: id}): each token special when
//                  special_tokens_map.json or tokenizer_config.json names it (bos_token, eos_token,
//                  unk_token, sep_token, pad_token, cls_token, mask_token, additional_special_tokens)
//                  or it is "<|endoftext|>" (Qwen2Tokenizer's unk, eos and pad), normalized = !special,
//                  lstrip, rstrip and single_word false, as transformers loads that file.
// tokenizer_config.json must name tokenizer_class Qwen2Tokenizer or Qwen2TokenizerFast. A special token
// those files name must be in vocab.json or among the added tokens. TokenizerError naming the file,
// the line or field, and what is wrong.
std::string qwen2TokenizerJson(const std::string& folder);

} // namespace parallax
