#pragma once

#include "trainer/models/Model.h"

#include <map>
#include <memory>
#include <string>

namespace parallax {

class SafetensorsFile;
struct TensorView;

// A safetensors view's values (F32, BF16 or F16) as a tensor: over the mapping where it is aligned,
// else copied. Throws std::invalid_argument for other types.
torch::Tensor tensorOf(const TensorView& view);

// A model's parameter values by their single-device names ("units.3.self_attn.q_proj.weight"),
// each whole: what a loader takes this rank's part of (its tensor-parallel slab, its ZeRO-3 range).
class WeightSource {
public:
    virtual ~WeightSource() = default;
    virtual bool has(const std::string& name) const = 0;
    // The whole tensor, in the source's dtype: a view of the mapped file where it is aligned, so that
    // only what the caller reads of it is read from disk.
    virtual torch::Tensor full(const std::string& name) const = 0;
};

// The weights of a published kind (qwen2, qwen2_5_vl) in FOLDER (model.safetensors.index.json and
// its shards, or one model.safetensors), named in whichever of the kind's published layouts the
// folder uses; F32, BF16 and F16 (the reader converts to the parameter's dtype as it copies).
// Constructed on the whole single-device model (before parallelism divides it), it checks every
// tensor's presence, shape and type from the headers alone, and throws std::invalid_argument
// starting "model.from = FOLDER:" with every problem found; shards are mapped on first use.
class PublishedWeightSource : public WeightSource {
public:
    PublishedWeightSource(const Model& model, std::string folder);
    ~PublishedWeightSource() override;

    bool has(const std::string& name) const override { return m_stored.count(name) > 0; }
    torch::Tensor full(const std::string& name) const override;

private:
    std::string m_folder; // where the weights are (a pipeline folder's transformer/)
    std::string m_file;   // the kind's single weights file (ModelKindInfo::weights_file)
    std::map<std::string, std::string> m_stored;  // parameter name -> tensor name in the folder
    std::map<std::string, std::string> m_shardOf; // tensor name -> shard file (a sharded folder)
    mutable std::map<std::string, std::unique_ptr<SafetensorsFile>> m_files;
};

// Copies every parameter of the whole single-device `model` from FOLDER (as PublishedWeightSource
// reads it), one tensor at a time: for a model that is not divided (an export).
void loadPublishedWeights(Model& model, const std::string& folder);

} // namespace parallax
