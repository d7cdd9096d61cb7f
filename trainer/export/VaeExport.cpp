#include "trainer/export/VaeExport.h"

#include "core/util/Files.h"
#include "trainer/data/Dataset.h"
#include "trainer/models/QwenImageVaeModel.h"
#include "trainer/models/QwenImageVaeTraining.h"
#include "trainer/models/QwenImageVaeWeights.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace parallax {

HfExportResult exportVaeFolder(const HfExportOptions& o, const RunSpec& spec, const ModelDims& dims,
                               const CheckpointReader& reader, const std::function<void(const std::string&)>& say) {
    const std::shared_ptr<Model> model = constructModel(dims);
    {
        torch::NoGradGuard noGrad;
        for (auto& item : model->named_parameters()) item.value().copy_(reader.full(item.key(), "param"));
    }
    const auto unit = std::dynamic_pointer_cast<QwenImageVaeUnit>(model->unit(0));
    if (!unit) throw std::logic_error("a qwen_image_vae model without its VAE unit");
    unit->vae->eval();

    const std::unique_ptr<Dataset> data = makeDataset(spec.data, dims, spec.train.seed);
    const int64_t count = std::min<int64_t>(data->size(), kVaeStatisticsSamples);
    std::vector<torch::Tensor> batches;
    for (int64_t first = 0; first < count; first += 64) {
        std::vector<int64_t> indices(static_cast<size_t>(std::min<int64_t>(64, count - first)));
        std::iota(indices.begin(), indices.end(), first);
        batches.push_back(data->makeBatch(indices, 0).images);
    }
    measureLatentStatistics(*unit->vae, batches);
    say("latent statistics from " + std::to_string(count) + " images of " + data->describe());

    saveQwenImageVae(*unit->vae, o.out, o.bf16);
    HfExportResult result;
    result.checkpoint = reader.dir();
    result.diffusers = true;
    result.tensors = static_cast<int64_t>(unit->vae->parameters().size());
    result.bytes = static_cast<uint64_t>(fileSize(joinPath(o.out, "diffusion_pytorch_model.safetensors")));
    say("wrote the VAE (" + std::to_string(result.tensors) + " tensors, " + std::to_string(result.bytes) +
        " bytes) with its config.json to " + o.out);
    return result;
}

} // namespace parallax
