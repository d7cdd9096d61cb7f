#pragma once

#include <string>

namespace parallax {

// Turns what a person typed in a log search box into an FTS5 MATCH expression.
//
// Plain words (the common case) are matched literally: each whitespace-separated word becomes a
// quoted phrase, so `loss=nan`, `CUDA_ERROR_OUT_OF_MEMORY` or `rank-3` need no escaping, all
// words must occur (in any order), and a trailing `*` makes a word a prefix (`nccl*`). Words with
// no letters or digits are dropped; when none is left the result is empty (no text filter).
//
// Text that uses FTS5 syntax — a double quote, a parenthesis, or AND / OR / NOT as a whole
// uppercase word — is passed through unchanged, so `"out of memory" OR oom` and
// `NEAR(nccl timeout, 5)` work; RunStore reports invalid syntax as a StoreError.
std::string ftsQueryFromUserText(const std::string& text);

// True when `text` is passed through as FTS5 syntax by ftsQueryFromUserText.
bool usesFtsSyntax(const std::string& text);

} // namespace parallax
