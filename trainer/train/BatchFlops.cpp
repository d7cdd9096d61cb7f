#include "trainer/train/BatchFlops.h"

#include "core/spec/Estimates.h"
#include "core/spec/ModelKinds.h"
#include "trainer/data/DatasetUtils.h"

namespace parallax {

BatchFlops::BatchFlops(ModelDims dims, FinetuneSpec finetune)
    : m_dims(std::move(dims)), m_finetune(std::move(finetune)),
      m_latent(modelKindInfo(m_dims.kind).objective == Objective::LatentFlow) {}

double BatchFlops::of(const Batch& batch) {
    if (!m_latent) return 0;
    const LatentSequence s = latentSequence(m_dims, batch);
    const std::pair<int64_t, int64_t> shape{s.text, s.image};
    auto it = m_perSample.find(shape);
    if (it == m_perSample.end())
        it = m_perSample.emplace(shape, trainingFlopsPerLatentSample(m_dims, m_finetune, s.text, s.image)).first;
    const torch::Tensor& latents = batch.images.defined() ? batch.images : batch.noise;
    return it->second * static_cast<double>(latents.size(0));
}

} // namespace parallax
