#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace parallax::bench {

// One line of a benchmark's result table.
struct BenchRow {
    std::string what;
    std::string target;   // empty: informational
    std::string measured;
    bool pass = true;
};

inline void printTable(const std::string& title, const std::vector<BenchRow>& rows) {
    size_t w0 = 9, w1 = 6, w2 = 8;
    for (const BenchRow& r : rows) {
        w0 = std::max(w0, r.what.size());
        w1 = std::max(w1, r.target.size());
        w2 = std::max(w2, r.measured.size());
    }
    std::printf("\n%s\n", title.c_str());
    std::printf("| %-*s | %-*s | %-*s | pass |\n", int(w0), "benchmark", int(w1), "target", int(w2), "measured");
    std::printf("|%s|%s|%s|------|\n", std::string(w0 + 2, '-').c_str(), std::string(w1 + 2, '-').c_str(),
                std::string(w2 + 2, '-').c_str());
    for (const BenchRow& r : rows) {
        std::printf("| %-*s | %-*s | %-*s | %-4s |\n", int(w0), r.what.c_str(), int(w1),
                    r.target.empty() ? "-" : r.target.c_str(), int(w2), r.measured.c_str(),
                    r.target.empty() ? "-" : (r.pass ? "yes" : "NO"));
    }
    std::fflush(stdout);
}

inline double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
    return v[i];
}

inline std::string ms(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f ms", v);
    return buf;
}

} // namespace parallax::bench
