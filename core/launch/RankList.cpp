#include "core/launch/RankList.h"

#include <algorithm>

namespace parallax {

std::string countText(size_t n) {
    std::string digits = std::to_string(n), out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string rankRanges(std::vector<int> ranks, size_t mostPieces) {
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    std::vector<std::string> pieces;
    for (size_t i = 0; i < ranks.size();) {
        size_t j = i;
        while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
        if (j - i >= 2) {
            pieces.push_back(std::to_string(ranks[i]) + "-" + std::to_string(ranks[j]));
        } else {
            for (size_t k = i; k <= j; ++k) pieces.push_back(std::to_string(ranks[k]));
        }
        i = j + 1;
    }
    std::string out;
    const size_t shown = pieces.size() > mostPieces ? std::max<size_t>(1, mostPieces - 1) : pieces.size();
    for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + pieces[i];
    if (shown < pieces.size()) out += ", … (" + countText(pieces.size()) + " pieces in all)";
    return out;
}

std::string ranksText(const std::vector<int>& ranks) {
    if (ranks.size() == 1) return "rank " + std::to_string(ranks.front());
    if (ranks.size() < 10) return "ranks " + rankRanges(ranks);
    return countText(ranks.size()) + " ranks (" + rankRanges(ranks) + ")";
}

} // namespace parallax
