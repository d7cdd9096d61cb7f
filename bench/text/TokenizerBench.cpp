// Encode throughput of the tokenizer on one thread: each text file's lines encoded one by one, as a
// dataset reader would, by a freshly loaded tokenizer (cold: every word new to its cache) and then
// again by the same one (warm, median of the repeats). Prints one table.
//
//   bench_tokenizer --tokenizer TOKENIZER_JSON --text FILE [--text FILE ...] [--repeat N]
//
// MB/s counts the bytes of the lines (line breaks left out). "CPU MB/s" divides by this thread's CPU
// time instead of wall time: on a machine shared with other work it shows what encoding itself costs.
// The 10 MB/s target is for the first text (mixed prose, code and CJK); the others are shown beside it.
#include "core/text/Tokenizer.h"
#include "core/util/Files.h"

#include <ctime>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

using namespace parallax;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kTargetMBps = 10.0;

double threadCpuSeconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct Pass {
    double wall = 0;
    double cpu = 0;
    size_t tokens = 0;
};

Pass encodeAll(const Tokenizer& tokenizer, const std::vector<std::string_view>& lines) {
    std::vector<int32_t> ids;
    Pass p;
    const double cpu0 = threadCpuSeconds();
    const auto t0 = Clock::now();
    for (const std::string_view line : lines) {
        ids.clear();
        tokenizer.encode(line, ids, nullptr);
        p.tokens += ids.size();
    }
    p.wall = std::chrono::duration<double>(Clock::now() - t0).count();
    p.cpu = threadCpuSeconds() - cpu0;
    return p;
}

std::vector<std::string_view> linesOf(const std::string& text, size_t& bytes) {
    std::vector<std::string_view> lines;
    bytes = 0;
    for (size_t start = 0; start < text.size();) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos)
            end = text.size();
        lines.emplace_back(text.data() + start, end - start);
        bytes += end - start;
        start = end + 1;
    }
    return lines;
}

void usage() {
    std::fprintf(stderr, "usage: bench_tokenizer --tokenizer TOKENIZER_JSON --text FILE [--text FILE ...] [--repeat N]\n");
    std::exit(2);
}

} // namespace

int main(int argc, char** argv) {
    std::string tokenizerFile;
    std::vector<std::string> texts;
    int repeat = 5;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc)
            usage();
        if (a == "--tokenizer") tokenizerFile = argv[++i];
        else if (a == "--text") texts.push_back(argv[++i]);
        else if (a == "--repeat") repeat = std::max(1, std::atoi(argv[++i]));
        else usage();
    }
    if (tokenizerFile.empty() || texts.empty())
        usage();

    std::printf("tokenizer: %s\n\n", tokenizerFile.c_str());
    std::printf("%-28s %8s %8s %10s %7s %9s %9s %9s %9s %6s\n", "text", "MB", "lines", "tokens", "load s", "cold MB/s",
                "warm MB/s", "best MB/s", "CPU MB/s", "10MB/s");
    bool met = true;
    for (const std::string& file : texts) {
        const std::string text = readFile(file);
        size_t bytes = 0;
        const std::vector<std::string_view> lines = linesOf(text, bytes);
        const auto t0 = Clock::now();
        const Tokenizer tokenizer = Tokenizer::load(tokenizerFile);
        const double load = std::chrono::duration<double>(Clock::now() - t0).count();
        const Pass cold = encodeAll(tokenizer, lines);
        std::vector<Pass> warm;
        for (int r = 0; r < repeat; ++r)
            warm.push_back(encodeAll(tokenizer, lines));
        std::sort(warm.begin(), warm.end(), [](const Pass& a, const Pass& b) { return a.wall < b.wall; });
        const Pass& median = warm[warm.size() / 2];
        const double mb = static_cast<double>(bytes) / 1e6;
        const double coldRate = mb / cold.wall, warmRate = mb / median.wall;
        const bool first = &file == &texts.front();
        const bool ok = std::min(coldRate, warmRate) >= kTargetMBps;
        if (first)
            met = ok;
        std::printf("%-28s %8.2f %8zu %10zu %7.2f %9.1f %9.1f %9.1f %9.1f %6s\n", baseName(file).c_str(), mb,
                    lines.size(), cold.tokens, load, coldRate, warmRate, mb / warm.front().wall, mb / median.cpu,
                    !first ? "-" : ok ? "yes" : "NO");
    }
    std::printf("\ntarget %.0f MB/s on one core (cold and warm) on %s: %s\n", kTargetMBps, baseName(texts.front()).c_str(),
                met ? "met" : "NOT met");
    return 0;
}
