#include "core/spec/MicroBatchRules.h"

#include <algorithm>

namespace parallax {

int64_t usableMicroBatch(const RunSpec& spec, int64_t fits) {
    const int64_t dp = std::max<int64_t>(1, spec.parallel.dp);
    const int64_t share = spec.train.global_batch % dp == 0 ? spec.train.global_batch / dp : 1;
    for (int64_t size = std::min(fits, share); size > 1; --size)
        if (share % size == 0) return size;
    return 1;
}

int64_t largestUsefulMicroBatch(const RunSpec& spec) {
    return std::max<int64_t>(1, spec.train.global_batch / std::max<int64_t>(1, spec.parallel.dp));
}

} // namespace parallax
