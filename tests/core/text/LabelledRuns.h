#pragma once

#include "core/text/QwenChat.h"

#include <string>
#include <vector>

namespace parallax::testing {

// The text of each run of tokens the chat encoding labels as an answer, decoded.
inline std::vector<std::string> labelledRuns(const Tokenizer& tokenizer, const ChatEncoding& e) {
    std::vector<std::string> runs;
    std::vector<int32_t> run;
    for (size_t i = 0; i <= e.ids.size(); ++i) {
        if (i < e.ids.size() && e.assistant[i]) {
            run.push_back(e.ids[i]);
        } else if (!run.empty()) {
            runs.push_back(tokenizer.decode(run));
            run.clear();
        }
    }
    return runs;
}

} // namespace parallax::testing
