#pragma once

#include "core/spec/Choice.h"
#include "core/telemetry/Events.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace parallax::test {

// Crafted pipeline spans: a schedule run with every pass taking `passSeconds` and free
// communication, each stage blocked in a recv span while its input is not there yet, as the
// trainer records them (with a send-drain span per rank when there are several stages). Ranks
// are stage * replicas + replica.
struct PipelineSpans {
    Schedule schedule = Schedule::OneFOneB;
    int stages = 4;
    int microbatches = 8;
    int chunks = 1;                // interleaved: model chunks per stage
    int replicas = 1;              // ranks per stage (tp * dp)
    double passSeconds = 1.0 / 1024.0;
    double t0 = 1.7e9;

    struct Action {
        bool forward;
        int chunk;
        int micro;
    };

    std::vector<Action> order(int s) const {
        const int p = stages, m = microbatches, v = chunks;
        std::vector<Action> out;
        if (schedule == Schedule::GPipe) {
            for (int i = 0; i < m; ++i) out.push_back({true, 0, i});
            for (int i = 0; i < m; ++i) out.push_back({false, 0, i});
            return out;
        }
        const int total = m * v;
        const int warmup = schedule == Schedule::OneFOneB ? std::min(p - s - 1, m) : std::min((p - s - 1) * 2 + (v - 1) * p, total);
        auto fwd = [&](int k) { return Action{true, (k % (p * v)) / p, (k / (p * v)) * p + k % p}; };
        auto bwd = [&](int k) { return Action{false, v - 1 - (k % (p * v)) / p, (k / (p * v)) * p + k % p}; };
        for (int k = 0; k < warmup; ++k) out.push_back(fwd(k));
        for (int i = 0; i < total - warmup; ++i) {
            out.push_back(fwd(warmup + i));
            out.push_back(bwd(i));
        }
        for (int k = total - warmup; k < total; ++k) out.push_back(bwd(k));
        return out;
    }

    std::vector<SpanEvent> make(int64_t step) const {
        const int p = stages, last = stages * chunks - 1;
        std::vector<std::vector<Action>> orders;
        for (int s = 0; s < p; ++s) orders.push_back(order(s));
        std::map<std::tuple<bool, int, int>, double> done; // (forward, virtual stage, micro) -> end
        std::vector<size_t> next(size_t(p), 0);
        std::vector<double> free(size_t(p), t0);
        std::vector<SpanEvent> out;
        auto addSpan = [&](int s, int micro, const char* kind, double start, double end) {
            for (int r = 0; r < replicas; ++r) {
                SpanEvent e;
                e.rank = s * replicas + r;
                e.stage = s;
                e.step = step;
                e.microbatch = micro;
                e.kind = kind;
                e.start = start;
                e.end = end;
                out.push_back(e);
            }
        };
        for (bool progress = true; progress;) {
            progress = false;
            for (int s = 0; s < p; ++s) {
                while (next[size_t(s)] < orders[size_t(s)].size()) {
                    const Action a = orders[size_t(s)][next[size_t(s)]];
                    const int vs = a.chunk * p + s;
                    const bool needsInput = a.forward ? vs > 0 : true;
                    const bool remote = a.forward ? vs > 0 : vs < last;
                    double ready = free[size_t(s)];
                    if (needsInput) {
                        const auto key = a.forward ? std::make_tuple(true, vs - 1, a.micro)
                                                   : (vs < last ? std::make_tuple(false, vs + 1, a.micro)
                                                                : std::make_tuple(true, vs, a.micro));
                        auto it = done.find(key);
                        if (it == done.end()) break;
                        if (remote) addSpan(s, a.micro, "recv", ready, std::max(ready, it->second));
                        ready = std::max(ready, it->second);
                    }
                    const double end = ready + passSeconds;
                    addSpan(s, a.micro, a.forward ? "F" : "B", ready, end);
                    done[{a.forward, vs, a.micro}] = end;
                    free[size_t(s)] = end;
                    ++next[size_t(s)];
                    progress = true;
                }
            }
        }
        for (int s = 0; s < p; ++s) {
            if (next[size_t(s)] != orders[size_t(s)].size()) throw std::logic_error("crafted schedule deadlocked");
            if (p > 1) addSpan(s, -1, "send", free[size_t(s)], free[size_t(s)]);
        }
        return out;
    }
};

} // namespace parallax::test
