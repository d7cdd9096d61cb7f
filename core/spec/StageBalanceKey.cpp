#include "core/spec/StageBalanceKey.h"

#include "core/spec/SpecIO.h"

namespace parallax {

std::string stageBalanceKey(const RunSpec& spec) {
    RunSpec key;
    key.model = spec.model;
    key.parallel = spec.parallel;
    key.parallel.stage_layers.clear();
    key.parallel.stage_split = StageSplit::Flops;
    key.train.micro_batch = spec.train.micro_batch;
    key.launch.device = spec.launch.device;
    key.launch.threads_per_rank = spec.launch.threads_per_rank;
    return toToml(key);
}

} // namespace parallax
