#include "trainer/data/SyntheticDataset.h"

#include "trainer/compat/TorchCompat.h"
#include "trainer/data/DatasetUtils.h"
#include "trainer/data/LatentBatch.h"

#include "core/spec/ModelKinds.h"

#include <algorithm>

namespace parallax {

namespace {

// Separate streams of (seed, index): the sample's content and its class.
constexpr uint64_t kContentStream = 0x636f6e74ULL;
constexpr uint64_t kClassStream = 0x636c6173ULL;

} // namespace

SyntheticDataset::SyntheticDataset(const ModelDims& dims, uint64_t seed) : m_dims(dims), m_seed(seed) {}

const std::vector<std::string>& SyntheticDataset::classNames() {
    static const std::vector<std::string> names = {
        "top-left dot", "top-right dot", "low-left dot", "low-right dot", "center dot",
        "top bar",      "bottom bar",    "left bar",     "right bar",     "cross"};
    return names;
}

int64_t SyntheticDataset::label(int64_t index) const {
    return static_cast<int64_t>(hashValues({kClassStream, m_seed, static_cast<uint64_t>(index)}) % kClasses);
}

torch::Tensor SyntheticDataset::sequence(int64_t index) const {
    const uint64_t h = hashValues({kContentStream, m_seed, static_cast<uint64_t>(index)});
    const int64_t v = m_dims.vocab;
    const int64_t a = 1 + 2 * static_cast<int64_t>(h % 4);
    const int64_t b = 1 + static_cast<int64_t>((h >> 8) % 16);
    int64_t x = static_cast<int64_t>((h >> 16) % static_cast<uint64_t>(v));
    torch::Tensor seq = torch::empty({m_dims.seq_len + 1}, torch::kInt64);
    int64_t* p = seq.data_ptr<int64_t>();
    for (int64_t i = 0; i <= m_dims.seq_len; ++i) {
        p[i] = x;
        x = (a * x + b) % v;
    }
    return seq;
}

torch::Tensor SyntheticDataset::image(int64_t index) const {
    torch::Generator gen = compat::makeGenerator(hashValues({kContentStream, m_seed, static_cast<uint64_t>(index)}));
    auto uniform = [&](double lo, double hi) { return lo + (hi - lo) * torch::rand({1}, gen).item<double>(); };
    const int64_t s = m_dims.image_size;
    // Pixel centres in [0, 1].
    torch::Tensor coords = (torch::arange(s, torch::kFloat32) + 0.5) / static_cast<double>(s);
    torch::Tensor ys = coords.view({s, 1});
    torch::Tensor xs = coords.view({1, s});
    const double jx = uniform(-0.05, 0.05), jy = uniform(-0.05, 0.05);
    const double width = uniform(0.08, 0.12);
    auto bump = [&](const torch::Tensor& d) { return torch::exp(-(d * d) / (2.0 * width * width)); };
    auto blob = [&](double cx, double cy) { return bump(xs - (cx + jx)) * bump(ys - (cy + jy)); };
    auto hbar = [&](double cy) { return bump(ys - (cy + jy)).expand({s, s}); };
    auto vbar = [&](double cx) { return bump(xs - (cx + jx)).expand({s, s}); };
    torch::Tensor shape;
    switch (label(index)) {
    case 0: shape = blob(0.3, 0.3); break;
    case 1: shape = blob(0.7, 0.3); break;
    case 2: shape = blob(0.3, 0.7); break;
    case 3: shape = blob(0.7, 0.7); break;
    case 4: shape = blob(0.5, 0.5); break;
    case 5: shape = hbar(0.25); break;
    case 6: shape = hbar(0.75); break;
    case 7: shape = vbar(0.25); break;
    case 8: shape = vbar(0.75); break;
    default: shape = torch::maximum(hbar(0.5), vbar(0.5)); break;
    }
    const int64_t c = m_dims.channels;
    // Channels differ in brightness so that colour models see more than one repeated plane.
    torch::Tensor gains = 1.0 - 0.5 * torch::arange(c, torch::kFloat32) / static_cast<double>(std::max<int64_t>(c, 1));
    torch::Tensor img = shape.unsqueeze(0) * gains.view({c, 1, 1}) * uniform(0.8, 1.2); // (c, S, S)
    img = img + 0.05 * torch::randn({c, s, s}, gen, torch::kFloat32);
    if (reconstructsImages(modelKindInfo(m_dims.kind))) return imageValues(img.clamp(0.0, 1.0));
    return (img - img.mean()) / (img.std() + 1e-6); // latents: about zero-mean, unit-variance
}

torch::Tensor SyntheticDataset::prompt(int64_t index) const {
    // The class's states, the same for every sample of it, with a little of the sample's own noise;
    // between half the text tokens and all of them.
    const uint64_t h = hashValues({kContentStream, m_seed, static_cast<uint64_t>(index)});
    const int64_t half = std::max<int64_t>(1, m_dims.seq_len / 2);
    const int64_t tokens = std::min(m_dims.seq_len, half + static_cast<int64_t>(h % static_cast<uint64_t>(half + 1)));
    torch::Generator classGen = compat::makeGenerator(hashValues({kClassStream, m_seed, static_cast<uint64_t>(label(index))}));
    torch::Generator own = compat::makeGenerator(h);
    const torch::Tensor base = torch::randn({m_dims.seq_len, m_dims.text_dim}, classGen, torch::kFloat32);
    return base.narrow(0, 0, tokens) + 0.1 * torch::randn({tokens, m_dims.text_dim}, own, torch::kFloat32);
}

Batch SyntheticDataset::makeBatch(const std::vector<int64_t>& indices, int64_t step) const {
    requireIndices(indices, size(), "synthetic dataset");
    if (readsLatents(modelKindInfo(m_dims.kind))) {
        std::vector<LatentSample> samples;
        for (int64_t i : indices) samples.push_back({image(i), prompt(i), {}});
        return latentBatch(samples, indices, step, m_seed, m_dims);
    }
    if (!modelKindInfo(m_dims.kind).images) {
        std::vector<torch::Tensor> rows;
        rows.reserve(indices.size());
        for (int64_t i : indices) rows.push_back(sequence(i));
        Batch batch;
        batch.tokens = torch::stack(rows); // (B, T+1)
        batch.sample_index = indices;
        return batch;
    }
    std::vector<torch::Tensor> images;
    images.reserve(indices.size());
    for (int64_t i : indices) images.push_back(image(i));
    return imageBatch(images, indices, step, m_seed, m_dims);
}

std::string SyntheticDataset::describe() const {
    if (readsLatents(modelKindInfo(m_dims.kind)))
        return "synthetic: " + std::to_string(kSamples) + " latents of " + std::to_string(m_dims.channels) + " x " +
               std::to_string(m_dims.image_size) + " x " + std::to_string(m_dims.image_size) + " (" +
               std::to_string(kClasses) + " shapes) with prompt states of up to " + std::to_string(m_dims.seq_len) +
               " tokens";
    if (!modelKindInfo(m_dims.kind).images)
        return "synthetic: " + std::to_string(kSamples) + " affine sequences of " + std::to_string(m_dims.seq_len + 1) +
               " tokens mod " + std::to_string(m_dims.vocab);
    return "synthetic: " + std::to_string(kSamples) + " " + std::to_string(m_dims.image_size) + "x" +
           std::to_string(m_dims.image_size) + " images of " + std::to_string(kClasses) + " shapes";
}

} // namespace parallax
