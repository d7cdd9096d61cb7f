#include "core/spec/Suggestions.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace parallax {

namespace {

std::string lower(const std::string& s) {
    std::string out = s;
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps.
size_t editDistance(const std::string& a, const std::string& b) {
    const size_t n = a.size(), m = b.size();
    std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1, 0));
    for (size_t i = 0; i <= n; ++i) d[i][0] = i;
    for (size_t j = 0; j <= m; ++j) d[0][j] = j;
    for (size_t i = 1; i <= n; ++i) {
        for (size_t j = 1; j <= m; ++j) {
            const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    }
    return d[n][m];
}

// Short words tolerate one edit, longer ones a few more: "tp" -> "pp" is a plausible slip,
// "gpt" -> "qwen2" is not.
size_t tolerance(size_t length) {
    if (length <= 5) return 1;
    if (length <= 10) return 2;
    return 3;
}

} // namespace

std::string closestMatch(const std::string& word, const std::vector<std::string>& candidates) {
    const std::string w = lower(word);
    std::string best;
    size_t bestDistance = std::numeric_limits<size_t>::max();
    for (const std::string& c : candidates) {
        // The distance is at least the difference in length; past the tolerance no match is
        // possible, and a long value (a pasted paragraph) is not compared letter by letter.
        const size_t longer = std::max(w.size(), c.size()), shorter = std::min(w.size(), c.size());
        if (longer - shorter > tolerance(longer)) continue;
        const size_t d = editDistance(w, lower(c));
        if (d < bestDistance) {
            bestDistance = d;
            best = c;
        }
    }
    if (best.empty() || bestDistance > tolerance(std::max(w.size(), best.size()))) return "";
    if (bestDistance >= w.size()) return ""; // nothing of the word survives
    return best;
}

std::string didYouMean(const std::string& word, const std::vector<std::string>& candidates, bool quote) {
    const std::string match = closestMatch(word, candidates);
    if (match.empty()) return "";
    return quote ? "; did you mean \"" + match + "\"?" : "; did you mean " + match + "?";
}

std::string joinList(const std::vector<std::string>& items, const std::string& lastSeparator) {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += (i + 1 == items.size()) ? lastSeparator : ", ";
        out += items[i];
    }
    return out;
}

} // namespace parallax
