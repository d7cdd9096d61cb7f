#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace parallax {

// tokenizer.json read in one pass, its two large members (model.vocab, some 150,000 entries, and
// model.merges, as many) straight into plain containers and the rest into a JSON tree without
// them: a third of the time and memory of a tree of the whole file. Used by TokenizerJson.cpp only.
struct TokenizerJsonStream {
    nlohmann::json tree;                                    // the file without model.vocab, model.merges
    bool hasVocab = false;
    std::vector<std::pair<std::string, int64_t>> vocab;     // as written (checked by the reader)
    bool hasMerges = false;
    std::vector<std::pair<std::string, std::string>> merges;
    std::string error;                                      // what is wrong, naming the field; empty if nothing

    // Parses `text`; false with `error` set when it is not JSON or the two members have the wrong shape.
    bool parse(const std::string& text);
};

} // namespace parallax
