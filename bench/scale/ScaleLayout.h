#pragma once

// The layout the scale benchmark's stand-in launcher (bench_scale_launcher) plays, and the
// environment through which the benchmark tells it what to do. The supervisor passes its own
// environment on to the launcher, so the benchmark sets these before it starts the supervisor.

#include <cstdlib>
#include <string>

namespace parallax::scale {

inline constexpr const char* kSecondsEnv = "PARALLAX_SCALE_SECONDS";     // how long the ranks emit
inline constexpr const char* kHangAtEnv = "PARALLAX_SCALE_HANG_AT";      // second a rank goes silent; < 0: never
inline constexpr const char* kStragglerEnv = "PARALLAX_SCALE_STRAGGLER"; // 1: one rank computes twice as long
inline constexpr const char* kCountsEnv = "PARALLAX_SCALE_COUNTS";       // where the launcher writes its counts
inline constexpr const char* kRanksEnv = "PARALLAX_SCALE_RANKS";         // overrides mpirun's -np

inline constexpr int kRanksPerHost = 8;
inline constexpr int kMicrobatches = 8;    // per step and pipeline stage (spans)
inline constexpr double kStepSeconds = 1.0;
inline constexpr double kDeviceEvery = 0.5; // telemetry.device_sample_ms = 500
inline constexpr double kCommEvery = 2.0;   // the flight recorder's heartbeat
inline constexpr int kSpanEvery = 10;       // telemetry.span_every = 10

// dp x tp x pp: 4 pipeline stages where the ranks allow, up to 8 tensor-parallel ranks (one
// host's), the rest data-parallel: 1,024 ranks are 32 x 8 x 4, 8 ranks 1 x 2 x 4.
struct Layout {
    int ranks = 1;
    int dp = 1, tp = 1, pp = 1;
};

inline Layout layoutFor(int ranks) {
    Layout l;
    l.ranks = ranks;
    l.pp = ranks >= 8 && ranks % 4 == 0 ? 4 : 1;
    const int rest = ranks / l.pp;
    for (int tp : {8, 4, 2, 1})
        if (rest % tp == 0 && rest / tp >= 1) {
            l.tp = tp;
            break;
        }
    if (l.tp == 8 && rest == 8) l.tp = 2; // 32 ranks: 4 x 2 x 4, some data parallelism
    l.dp = rest / l.tp;
    return l;
}

inline std::string hostOf(int rank) { return "node" + std::to_string(rank / kRanksPerHost); }

// The rank that goes silent (--hang-at) and the one that computes twice as long (--straggler):
// the silent one is never rank 0 (which reports the steps), and the two differ from 8 ranks on.
inline int hangRank(int ranks) { return ranks < 8 ? ranks - 1 : ranks * 3 / 4 + (ranks >= 16 ? 1 : 0); }
inline int stragglerRank(int ranks) { return ranks < 8 ? 0 : ranks / 2 + 3; }

inline double envNumber(const char* name, double fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::atof(v) : fallback;
}

} // namespace parallax::scale
