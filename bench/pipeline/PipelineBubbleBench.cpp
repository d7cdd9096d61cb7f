// The measured pipeline bubble of 1f1b and zb1 on the same pp = 2 run: zb1's W passes fill stage
// 0's gaps between backwards, where 1f1b waits for the next gradient. Runs a gpt of 4 layers (width
// 128) with 8 micro-batches per step under each schedule and prints, per schedule, the bubble of
// every step after the first (the first also warms allocators and caches), their median and least,
// and the theoretical value. Load from elsewhere only adds idle time: run it on an idle machine.
//
//   bench_pipeline_bubbles [--steps N] [--rounds N]    (from the build folder, as `make bench` runs it)

#include "core/telemetry/PipelineBubbles.h"
#include "tests/trainer/support/SpecText.h"
#include "tests/trainer/support/WorkerRun.h"

#include <algorithm>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace parallax;
using namespace parallax::testing;

std::vector<double> measureBubbles(const char* schedule, int steps) {
    const TinySpec spec = bubbleComparisonSpec(schedule, steps);
    TempDir tmp;
    const WorkerRun run = runWorker(spec.toToml(), 2, tmp.path() + "/run");
    if (run.exitCode != 0) {
        std::fprintf(stderr, "the %s run failed (exit %d):\n%s\n", schedule, run.exitCode, run.output.c_str());
        std::exit(1);
    }
    std::vector<double> bubbles;
    for (const auto& [step, spans] : run.spansByStep())
        if (step > 0) bubbles.push_back(PipelineBubbles::measure(spans).overall);
    return bubbles;
}

} // namespace

int main(int argc, char** argv) {
    int steps = 11, rounds = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
        else {
            std::fprintf(stderr, "usage: bench_pipeline_bubbles [--steps N] [--rounds N]\n");
            return 2;
        }
    }
    setenv("PARALLAX_BUILD_DIR", std::filesystem::current_path().c_str(), 0); // the workers' folder
    std::printf("| schedule | round | steps | median bubble | least | theory |\n|---|---:|---:|---:|---:|---:|\n");
    for (int round = 1; round <= rounds; ++round) {
        for (const char* schedule : {"1f1b", "zb1"}) {
            std::vector<double> b = measureBubbles(schedule, steps);
            std::sort(b.begin(), b.end());
            if (b.empty()) continue;
            std::printf("| %s | %d | %zu | %.1f %% | %.1f %% | %.1f %% |\n", schedule, round, b.size(),
                        100 * b[b.size() / 2], 100 * b.front(),
                        100 * PipelineBubbles::theoretical(2, 8, Choice<Schedule>::named(schedule)));
            std::fflush(stdout);
        }
    }
    return 0;
}
