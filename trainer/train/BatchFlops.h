#pragma once

#include "core/spec/ModelDims.h"
#include "core/spec/RunSpec.h"
#include "trainer/models/Model.h"

#include <cstdint>
#include <map>
#include <utility>

namespace parallax {

// The training FLOPs (docs/models.md) of a micro-batch at its real shape, for a latent model, whose
// samples differ in length by aspect bucket, prompt and an Edit sample's reference images: each
// sample priced at the batch's prompt width and image tokens. 0 for the other kinds, whose FLOPs
// per token (Estimates) price every token alike. Prices are kept per shape.
class BatchFlops {
public:
    BatchFlops(ModelDims dims, FinetuneSpec finetune);
    double of(const Batch& batch);
    // Whether it prices batches (a latent model); of() gives 0 otherwise.
    bool pricesBatches() const { return m_latent; }

private:
    ModelDims m_dims;
    FinetuneSpec m_finetune;
    bool m_latent = false;
    std::map<std::pair<int64_t, int64_t>, double> m_perSample; // (text, image tokens) -> FLOPs
};

} // namespace parallax
