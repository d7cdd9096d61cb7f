#include "tests/trainer/support/SpecText.h"

#include <sstream>

namespace parallax::testing {

std::string TinySpec::toToml() const {
    std::ostringstream o;
    o << "name = \"equivalence-" << kind << "\"\n"
      << "[model]\nkind = \"" << kind << "\"\npreset = \"tiny\"\n";
    if (layers > 0) o << "layers = " << layers << "\n";
    o << extraModel << "\n";
    if (!finetune.empty()) o << "[finetune]\n" << finetune << "\n";
    o
      << "[data]\nkind = \"" << data << "\"\n" << extraData << "\n"
      << "[train]\nsteps = " << steps << "\nglobal_batch = " << globalBatch << "\nmicro_batch = " << microBatch
      << "\nlr = " << lr << "\nwarmup = 3\nseed = 1234\ngrad_clip = 1.0\ncheckpoint_every = " << checkpointEvery
      << "\nactivation_checkpointing = " << (recompute ? "true" : "false") << "\nrecompute_blocks = " << recomputeBlocks
      << "\n"
      << "[parallel]\ndp = " << dp << "\ntp = " << tp << "\npp = " << pp << "\nzero = " << zero
      << "\nschedule = \"" << schedule << "\"\nvirtual_stages = " << virtualStages << "\nbucket_mb = " << bucketMb
      << "\n"
      << "[launch]\ntarget = \"local\"\ndevice = \"cpu\"\n"
      << "[telemetry]\ndevice_sample_ms = 1000\nspan_every = " << spanEvery << "\n";
    return o.str();
}

TinySpec bubbleComparisonSpec(const std::string& schedule, int64_t steps, int pp) {
    TinySpec spec;
    spec.kind = "gpt";
    spec.layers = 2 * pp;
    spec.extraModel = "dim = 128\nffn = 512\n";
    spec.steps = steps;
    spec.globalBatch = 32;
    spec.microBatch = 4; // 8 micro-batches per step
    spec.pp = pp;
    spec.schedule = schedule;
    spec.spanEvery = 1;
    return spec;
}

} // namespace parallax::testing
