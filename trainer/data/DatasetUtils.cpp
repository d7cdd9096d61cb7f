#include "trainer/data/DatasetUtils.h"

#include "trainer/compat/TorchCompat.h"
#include "trainer/data/DataError.h"

#include "core/spec/ModelKinds.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace parallax {

namespace {

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// Separates the noise stream from any other per-sample stream of the same (seed, index).
constexpr uint64_t kFlowNoiseStream = 0x666c6f77ULL;

} // namespace

uint64_t hashValues(std::initializer_list<uint64_t> values) {
    uint64_t h = 0x7061726178ULL;
    for (uint64_t v : values) h = splitmix64(h ^ splitmix64(v));
    return h;
}

torch::Tensor fitImage(const torch::Tensor& image, int64_t channels, int64_t size) {
    torch::Tensor x = image.to(torch::kFloat32).unsqueeze(0); // (1, c, h, w)
    if (x.size(2) != size || x.size(3) != size) {
        namespace F = torch::nn::functional;
        x = F::interpolate(x, F::InterpolateFuncOptions()
                                  .size(std::vector<int64_t>{size, size})
                                  .mode(torch::kBilinear)
                                  .align_corners(false)); // (1, c, S, S)
    }
    x = x.squeeze(0); // (c, S, S)
    const int64_t have = x.size(0);
    if (have == channels) return x.contiguous();
    if (have == 1) return x.expand({channels, size, size}).contiguous();
    if (channels == 1) return x.mean(0, /*keepdim=*/true).contiguous();
    // Other channel counts cycle through the source channels.
    return x.index_select(0, torch::arange(channels, torch::kInt64).remainder(have)).contiguous();
}

torch::Tensor imageValues(const torch::Tensor& unit) { return 2.0 * unit - 1.0; }

Batch imageBatch(const std::vector<torch::Tensor>& images, const std::vector<int64_t>& indices, int64_t step,
                 uint64_t seed, const ModelDims& dims) {
    const int64_t b = static_cast<int64_t>(images.size());
    Batch batch;
    batch.sample_index = indices;
    batch.images = torch::stack(images); // (B, ch, S, S)
    // The noise of each image's posterior draw: the latents' shape, (z_dim, S / ratio, S / ratio).
    const int64_t side = dims.image_size / dims.patch;
    batch.noise = torch::empty({b, dims.z_dim, side, side}, torch::kFloat32);
    for (int64_t i = 0; i < b; ++i) {
        const uint64_t index = static_cast<uint64_t>(indices[static_cast<size_t>(i)]);
        torch::Generator gen =
            compat::makeGenerator(hashValues({kFlowNoiseStream, seed, static_cast<uint64_t>(step), index}));
        batch.noise[i].copy_(torch::randn({dims.z_dim, side, side}, gen, torch::kFloat32));
    }
    return batch;
}

int64_t lossElements(const ModelDims& dims, const Batch& batch) {
    // Labels aligned with the tokens (conversations): position i predicts label i + 1.
    auto shiftedLabels = [&batch] {
        return batch.labels.narrow(1, 1, batch.labels.size(1) - 1).ge(0).sum().item<int64_t>();
    };
    switch (modelKindInfo(dims.kind).objective) {
    case Objective::NextToken:
        return batch.labels.defined() ? shiftedLabels() : batch.tokens.size(0) * (batch.tokens.size(1) - 1);
    case Objective::LatentFlow: return (batch.images.defined() ? batch.images : batch.noise).numel(); // noise: of the latents to come
    case Objective::Conversation:
        return batch.labels.defined() ? shiftedLabels() : batch.tokens.size(0) * (batch.tokens.size(1) - 1);
    case Objective::Reconstruction: return batch.images.numel();
    }
    throw std::logic_error("lossElements: an objective without a count");
}

bool countsFilledPositions(const ModelDims& dims) {
    const Objective objective = modelKindInfo(dims.kind).objective;
    return objective == Objective::Conversation || objective == Objective::LatentFlow;
}

LatentSequence latentSequence(const ModelDims& dims, const Batch& batch) {
    if (modelKindInfo(dims.kind).objective != Objective::LatentFlow) return {};
    const torch::Tensor& latents = batch.images.defined() ? batch.images : batch.noise; // of the latents to come
    LatentSequence s;
    s.image = (latents.size(2) / 2) * (latents.size(3) / 2);
    for (const torch::Tensor& r : batch.reference_latents) s.image += (r.size(2) / 2) * (r.size(3) / 2);
    // A reference image still in pixels: the VAE's 8 x and packing's 2 x.
    for (const torch::Tensor& r : batch.reference_pixels) s.image += (r.size(2) / 16) * (r.size(3) / 16);
    s.text = batch.attention_mask.defined() ? batch.attention_mask.size(1)
             : batch.text_states.defined()  ? batch.text_states.size(1)
                                            : 0;
    return s;
}

int64_t filledPositions(const ModelDims& dims, const Batch& batch) {
    const Objective objective = modelKindInfo(dims.kind).objective;
    if (objective == Objective::LatentFlow) {
        const torch::Tensor& latents = batch.images.defined() ? batch.images : batch.noise;
        const int64_t image = latents.size(0) * latentSequence(dims, batch).image;
        const int64_t text = batch.attention_mask.defined() ? batch.attention_mask.sum().item<int64_t>()
                             : batch.text_states.defined() ? batch.text_states.size(0) * batch.text_states.size(1)
                                                           : 0;
        return image + text;
    }
    if (objective != Objective::Conversation) return 0;
    if (batch.attention_mask.defined()) return batch.attention_mask.sum().item<int64_t>();
    return batch.tokens.defined() ? batch.tokens.numel() : 0;
}

void requireImageModel(const ModelDims& dims, const std::string& dataKind) {
    if (!readsImages(modelKindInfo(dims.kind)))
        throw DataError("data.kind = \"" + dataKind + "\" gives images, which model.kind = \"" + choiceName(dims.kind) +
                        "\" cannot train on; use model.kind = " + modelKindNames(readsImages) +
                        ", or data.kind synthetic or text");
}

void requireTextModel(const ModelDims& dims) {
    if (modelKindInfo(dims.kind).images)
        throw DataError("data.kind = \"text\" trains a language model; use model.kind = " + modelKindNames(readsText) +
                        " or another data.kind");
}

void requireByteVocab(const ModelDims& dims, const std::string& dataKind) {
    if (hasVocabulary(modelKindInfo(dims.kind)) && dims.vocab < 256)
        throw DataError("model.vocab = " + std::to_string(dims.vocab) + " is smaller than the 256 byte tokens of data.kind = \"" +
                        dataKind + "\"; set model.vocab to at least 256");
}

void requireIndices(const std::vector<int64_t>& indices, int64_t size, const std::string& what) {
    for (int64_t i : indices)
        if (i < 0 || i >= size)
            throw DataError(what + ": sample index " + std::to_string(i) + " is outside 0.." + std::to_string(size - 1));
}

} // namespace parallax
