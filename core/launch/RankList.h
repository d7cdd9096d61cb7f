#pragma once

#include <string>
#include <vector>

namespace parallax {

// Ranks as a person reads them in an alert, bounded however many there are: runs of three or more
// consecutive ranks as ranges ("0-1018, 1020-1023"), at most `mostPieces` pieces, then how many
// more ("0, 2, 4, 6, 8, … (512 pieces in all)"). `ranks` in any order, repeats ignored.
std::string rankRanges(std::vector<int> ranks, size_t mostPieces = 6);

// "rank 5", "ranks 0, 2", "ranks 0-7", and from ten ranks on their count first:
// "1,023 ranks (0-1018, 1020-1023)".
std::string ranksText(const std::vector<int>& ranks);

// A count with thousands separated by commas: "1,023".
std::string countText(size_t n);

} // namespace parallax
