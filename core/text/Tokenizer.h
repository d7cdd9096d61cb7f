#pragma once

#include "core/text/AddedVocabulary.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace parallax {

// A byte-level BPE tokenizer read from a Hugging Face tokenizer.json (the GPT-2 family: GPT-2,
// Llama 3, Qwen), or from a folder of transformers' Qwen2Tokenizer files without one (vocab.json,
// merges.txt, tokenizer_config.json: TokenizerFiles.h): ids equal those of the Rust tokenizers'
// encode(text, add_special_tokens=False).
//
// A text goes through: invalid UTF-8 replaced (repairUtf8: one U+FFFD per maximal ill-formed
// subpart, as a browser's TextDecoder and Rust's from_utf8_lossy do); added tokens found in it as
// given; the rest normalized (Qwen: NFC) and searched for the added tokens that match normalized
// text; each remaining piece split into words by the pre-tokenizer (Split patterns, then ByteLevel);
// each word's bytes merged by BPE. decode(encode(x)) == prepare(x): x normalized outside its added
// tokens (for Qwen, NFC(x) unless a combining mark follows an added token).
//
// The pre-tokenizer's letters and digits are Unicode 14's (PCRE2 10.42), and its caseless groups
// fold case as Unicode does: `(?i:'s)` also takes "'ſ" (U+017F), where tokenizers.js folds ASCII only.
//
// Loading refuses other families (WordPiece, Unigram, WordLevel models; sentencepiece-style
// Metaspace; normalizers and pre-tokenizers other than those above) with a message saying what is
// read. No BOS/EOS is added: the post-processor is not applied.
//
// Copies share one immutable tokenizer; every const function may run on many threads at once.
class Tokenizer {
public:
    // A tokenizer.json, or a model folder holding either form: its tokenizer.json, read first, or else
    // the vocab.json, merges.txt and tokenizer_config.json (tokenizer_class Qwen2Tokenizer or
    // Qwen2TokenizerFast; added tokens from its added_tokens_decoder, or added_tokens.json) that
    // transformers saves for a Qwen2 tokenizer. TokenizerError naming the file and the field or line.
    static Tokenizer load(const std::string& fileOrFolder);
    // The text of a tokenizer.json; `source` names it in messages.
    static Tokenizer fromJson(const std::string& json, const std::string& source);

    std::vector<int32_t> encode(std::string_view text) const;
    // Appends the ids of `text` and, when `starts` is given, the byte offset where each token begins
    // in prepare(text) (which is `text` itself when it is valid UTF-8 and normalized).
    void encode(std::string_view text, std::vector<int32_t>& ids, std::vector<uint32_t>* starts) const;
    // `text` as encode sees it: valid UTF-8, normalized outside added tokens.
    std::string prepare(std::string_view text) const;

    // The text of `ids` (valid UTF-8: bytes that do not form characters become U+FFFD). Added tokens
    // read as their content, as in tokenizers.js. TokenizerError for an id the tokenizer does not have.
    std::string decode(const std::vector<int32_t>& ids, bool skipSpecialTokens = false) const;

    // The id of a token (an added token's content or a vocabulary string), if it has one.
    std::optional<int32_t> tokenId(std::string_view token) const;
    // One more than the largest id.
    int64_t idCount() const;
    const std::vector<AddedToken>& addedTokens() const;
    size_t vocabularySize() const; // entries of model.vocab
    size_t mergeCount() const;
    const std::string& source() const;

    struct Impl;

private:
    explicit Tokenizer(std::shared_ptr<const Impl> impl) : m_impl(std::move(impl)) {}
    std::shared_ptr<const Impl> m_impl;
};

} // namespace parallax
