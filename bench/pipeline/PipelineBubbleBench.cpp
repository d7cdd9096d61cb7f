// The measured pipeline bubble against theory: 1f1b and zb1 on the same pp = 2 run (zb1's W passes
// fill stage 0's gaps between backwards, where 1f1b waits for the next gradient), and 1f1b over 4
// stages (theory 3/11). Runs a gpt of two layers (width 128) per stage with 8 micro-batches per step
// and prints, per run, the bubble of every step after the first (the first also warms allocators and
// caches), their median and least, and the theoretical value. Load from elsewhere only adds idle
// time, and 4 stages want 4 free cores: run it on an idle machine.
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

std::vector<double> measureBubbles(const char* schedule, int steps, int pp) {
    const TinySpec spec = bubbleComparisonSpec(schedule, steps, pp);
    TempDir tmp;
    const WorkerRun run = runWorker(spec.toToml(), pp, tmp.path() + "/run");
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
    struct Run {
        const char* schedule;
        int pp;
    };
    std::printf("| schedule | stages | round | steps | median bubble | least | theory |\n"
                "|---|---:|---:|---:|---:|---:|---:|\n");
    for (int round = 1; round <= rounds; ++round) {
        for (const Run r : {Run{"1f1b", 2}, Run{"zb1", 2}, Run{"1f1b", 4}}) {
            std::vector<double> b = measureBubbles(r.schedule, steps, r.pp);
            std::sort(b.begin(), b.end());
            if (b.empty()) continue;
            std::printf("| %s | %d | %d | %zu | %.1f %% | %.1f %% | %.1f %% |\n", r.schedule, r.pp, round, b.size(),
                        100 * b[b.size() / 2], 100 * b.front(),
                        100 * PipelineBubbles::theoretical(r.pp, 8, Choice<Schedule>::named(r.schedule)));
            std::fflush(stdout);
        }
    }
    return 0;
}
