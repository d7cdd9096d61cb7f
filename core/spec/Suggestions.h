#pragma once

#include <string>
#include <vector>

namespace parallax {

// The candidate closest to `word` (case-insensitive edit distance, a swap of two neighbouring
// letters counting as one edit), or "" when none is close enough to be a plausible typo.
std::string closestMatch(const std::string& word, const std::vector<std::string>& candidates);

// "; did you mean \"1f1b\"?" for a likely typo, "" otherwise. `quote` puts the match in quotes
// (for values); keys are shown bare.
std::string didYouMean(const std::string& word, const std::vector<std::string>& candidates, bool quote = true);

// "a, b, c" / "a, b or c"
std::string joinList(const std::vector<std::string>& items, const std::string& lastSeparator = ", ");

} // namespace parallax
