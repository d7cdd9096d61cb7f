#pragma once

// Training with and without ProductCopies, for the CPU test (tests/trainer/parallel) and the GPU one.

#include "tests/trainer/models/ModelTestSupport.h"
#include "trainer/compat/TorchCompat.h"
#include "trainer/finetune/Finetune.h"
#include "trainer/parallel/DataParallel.h"
#include "trainer/parallel/FrozenWeights.h"
#include "trainer/parallel/GradBuckets.h"
#include "trainer/parallel/ProductCopies.h"
#include "trainer/train/AdamW.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace parallax::test {

struct Trained {
    std::vector<double> losses;
    std::vector<torch::Tensor> params; // the buckets' values after the last update
    size_t layersWithCopies = 0;
    bool copiesMatched = true;         // each copy equal to its parameter rounded, after every update
    int64_t heldInBf16 = 0;            // frozen Linear values moveToDevice held in bf16
    bool heldRead = true;              // each such layer without a copy, its weight its initial value rounded
};

// Trains a tiny model of `kind` ("qwen2_5_vl": every part trains; "qwen2_5_vl-frozen": its vision tower
// and merger frozen, as [finetune]'s defaults) for `steps` steps
// under bf16 autocast on `device`, its Linear layers reading ProductCopies or (copies false)
// autocast's casts; with `holdFrozen`, its frozen Linears moved to `device` in bf16 only (moveToDevice).
inline Trained trainWithProductCopies(const std::string& kind, bool copies, int steps, torch::Device device,
                                      bool holdFrozen = false) {
    const bool frozen = kind == "qwen2_5_vl-frozen";
    const ModelDims dims = dimsOf(frozen ? "qwen2_5_vl" : kind, "tiny");
    auto model = buildModel(dims, 11);
    RunSpec spec;
    spec.model.kind = dims.kind;
    FinetuneSpec finetune = finetuneOf(spec, dims);
    finetune.freeze_vision = finetune.freeze_merger = frozen;
    applyFinetune(*model, finetune, 11);
    std::map<std::string, torch::Tensor> initial;
    for (const auto& p : model->named_parameters()) initial[p.key()] = p.value().detach().clone();
    Trained out;
    out.heldInBf16 = moveToDevice(*model, device, holdFrozen ? std::optional(torch::kBFloat16) : std::nullopt);
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& p : model->named_parameters()) named.emplace_back(p.key(), p.value());
    BucketOptions options;
    options.bucketBytes = 16 * 1024; // several buckets
    GradBuckets buckets(named, options);
    DataParallel dp(buckets, nullptr);
    const std::map<std::string, Linear*> layers = linearLayers(*model);
    if (copies) dp.useProductCopies(std::make_unique<ProductCopies>(buckets, torch::kBFloat16, layers));
    AdamW adam(AdamWOptions{});
    for (Bucket& b : buckets.buckets()) adam.addGroup(b.params, b.grads, b.decay);

    out.layersWithCopies = dp.productCopies() ? dp.productCopies()->layersSet() : 0;
    for (int step = 0; step < steps; ++step) {
        dp.beginStep(1);
        const Batch batch = (dims.kind == ModelKind::Qwen2_5_Vl ? vlImageBatch(dims, 4, 7 + step)
                                                                 : batchOf(dims, 4, 4 * step))
                                .to(device);
        {
            compat::AutocastScope autocast(device.type(), at::kBFloat16, true);
            const Activation loss = model->forwardAll(batch);
            out.losses.push_back(meanLoss(loss));
            (loss.at(0) / loss.at(1)).backward();
        }
        dp.finishStep();
        adam.step(1e-3);
        dp.afterOptimizerStep();
        for (const auto& [name, layer] : layers) {
            if (!copies) continue;
            if (layer->weight.scalar_type() == torch::kBFloat16) { // held by moveToDevice
                out.heldRead &= !layer->product_weight.defined() && !layer->weight.requires_grad() &&
                                torch::equal(layer->weight.cpu(), initial.at(name + ".weight").to(torch::kBFloat16));
                continue;
            }
            out.copiesMatched &= layer->product_weight.defined() && layer->product_weight.scalar_type() == torch::kBFloat16 &&
                                 torch::equal(layer->product_weight, layer->weight.detach().to(torch::kBFloat16));
            if (layer->bias.defined())
                out.copiesMatched &= layer->product_bias.defined() &&
                                     torch::equal(layer->product_bias, layer->bias.detach().to(torch::kBFloat16));
        }
    }
    for (const Bucket& b : buckets.buckets()) out.params.push_back(b.params.cpu());
    return out;
}

} // namespace parallax::test
