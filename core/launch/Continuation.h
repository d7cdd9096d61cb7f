#pragma once

#include "core/spec/RunSpec.h"

#include <optional>
#include <string>
#include <vector>

namespace parallax {

// launch.on_host_failure = "resume": how a run that lost hosts (or a rank) goes on from its
// newest checkpoint, as a new run on the hosts that still answer.
struct ContinuationPlan {
    int64_t from_run = 0;           // the run whose newest checkpoint it continues from
    std::vector<std::string> sets; // applySpecOverrides changes: the hosts left out, the layout
    std::vector<std::string> hosts; // the hosts it continues on ("name:slots")
    int64_t dp = 1;
    std::string said; // "on node1 as dp=1 (tp=1, pp=1; 4 micro-batches a step, the global batch kept)"
};

// The largest data-parallel degree that fits the `answering` hosts' slots with tensor and
// pipeline parallelism kept and the global batch kept (micro-batches a step made up for it), and
// the changes that continue `spec` there, leaving `lost` out. An error naming the field when
// none fits or fewer than launch.min_hosts answer.
struct ContinuationResult {
    std::optional<ContinuationPlan> plan;
    std::string error;
};
ContinuationResult planContinuation(const RunSpec& spec, const std::vector<std::string>& answering,
                                    const std::vector<std::string>& lost);

} // namespace parallax
