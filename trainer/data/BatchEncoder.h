#pragma once

#include "trainer/models/Model.h"

namespace parallax {

// What turns a dataset's batch into the model's input inside the step, where the dataset leaves
// that part to it (Dataset::makeStepEncoder): frozen networks run on the rank's device, with no
// gradient, no optimizer state and no place in checkpoints or exports.
class BatchEncoder {
public:
    virtual ~BatchEncoder() = default;
    // `host` as makeBatch gave it, on the encoder's device as the model reads it.
    virtual Batch encode(const Batch& host) const = 0;
};

} // namespace parallax
