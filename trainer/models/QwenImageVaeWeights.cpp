#include "trainer/models/QwenImageVaeWeights.h"

#include "core/formats/Checkpoint.h"
#include "core/formats/FormatError.h"
#include "core/formats/ModelWeights.h"
#include "core/formats/SafetensorsWriter.h"
#include "core/util/Files.h"
#include "trainer/compat/TorchCompat.h"
#include "trainer/models/PublishedWeights.h"

#include <cmath>
#include <map>
#include <stdexcept>
#include <vector>

namespace parallax {

namespace {

constexpr const char* kWeightsFile = "diffusion_pytorch_model.safetensors"; // diffusers' name for a model's weights

// One parameter the built parts declare, by its state-dict name.
struct Wanted {
    std::string name;
    VaeLeaf* leaf;
    const VaeLeaf::Declared* declared;
};

std::vector<Wanted> wantedTensors(QwenImageVae& vae) {
    std::vector<Wanted> wanted;
    for (const auto& item : vae.named_modules()) {
        auto* leaf = dynamic_cast<VaeLeaf*>(item.value().get());
        if (!leaf) continue;
        for (const VaeLeaf::Declared& d : leaf->declared()) wanted.push_back({item.key() + "." + d.name, leaf, &d});
    }
    return wanted;
}

Checkpoint openWeights(const std::string& folder) {
    const std::string index = joinPath(folder, std::string(kWeightsFile) + ".index.json");
    const std::string source = isRegularFile(index) ? index : joinPath(folder, kWeightsFile);
    if (!isRegularFile(source))
        throw std::invalid_argument(folder + " holds neither " + kWeightsFile + " nor " + kWeightsFile +
                                    ".index.json: the VAE's weights are missing (a diffusers folder keeps them beside "
                                    "its config.json)");
    try {
        return Checkpoint::open(source);
    } catch (const FormatError& e) {
        throw std::invalid_argument(std::string(e.what()) +
                                    "; the VAE's weights cannot be read: fetch the file again (a download cut short "
                                    "leaves such a file)");
    }
}

bool floating(Dtype dtype) { return dtype == Dtype::F32 || dtype == Dtype::BF16 || dtype == Dtype::F16; }

// Every problem of the checkpoint's headers against the declared parameters, at most
// kMostWeightProblems of them and a count of the rest.
std::vector<std::string> weightProblems(const Checkpoint& weights, const std::vector<Wanted>& wanted) {
    std::vector<std::string> problems;
    for (const Wanted& w : wanted) {
        const std::vector<int64_t>& shape = w.declared->shape;
        const Checkpoint::Entry* e = weights.find(w.name);
        if (!e)
            problems.push_back(weights.source() + ": tensor " + quoteName(w.name) + " " + shapeText(shape) + " is missing");
        else if (e->tensor->shape != shape)
            problems.push_back(e->file->path() + ": tensor " + quoteName(w.name) + " has shape " +
                               shapeText(e->tensor->shape) + "; config.json gives " + shapeText(shape));
        else if (!floating(e->tensor->dtype))
            problems.push_back(e->file->path() + ": tensor " + quoteName(w.name) + " is " + dtypeName(e->tensor->dtype) +
                               "; Parallax reads F32, BF16 and F16 weights");
    }
    if (problems.size() > kMostWeightProblems) {
        const size_t more = problems.size() - kMostWeightProblems;
        problems.resize(kMostWeightProblems);
        problems.push_back(std::to_string(more) + " more problems");
    }
    return problems;
}

void requireVaeDtype(const QwenImageVaeOptions& options) {
    if (options.dtype != torch::kFloat32 && options.dtype != torch::kBFloat16)
        throw std::invalid_argument(std::string("the VAE runs in fp32 or bf16, not ") + c10::toString(options.dtype));
}

} // namespace

std::shared_ptr<QwenImageVae> loadQwenImageVae(const std::string& folder, const QwenImageVaeOptions& options) {
    requireVaeDtype(options);
    const std::string vaeFolder = qwenImageVaeFolder(folder);
    auto vae = std::make_shared<QwenImageVae>(readQwenImageVaeConfig(folder), options.encoder, options.decoder);
    const Checkpoint weights = openWeights(vaeFolder);
    const std::vector<Wanted> wanted = wantedTensors(*vae);
    const std::vector<std::string> problems = weightProblems(weights, wanted);
    if (!problems.empty()) {
        std::string message = vaeFolder + ": its weights do not fit the VAE its config.json describes (use the "
                                          "config.json that came with these weights):";
        for (const std::string& p : problems) message += "\n  " + p;
        throw std::invalid_argument(message);
    }
    for (const Wanted& w : wanted) {
        const torch::Tensor stored = tensorOf(weights.tensor(w.name)); // a view of the mapped file where aligned
        w.leaf->give(w.declared->name, stored.to(options.device, options.dtype, /*non_blocking=*/false, /*copy=*/true));
    }
    vae->eval();
    return vae;
}

std::shared_ptr<QwenImageVae> initQwenImageVae(QwenImageVaeConfig config, uint64_t seed,
                                               const QwenImageVaeOptions& options) {
    requireVaeDtype(options);
    if (config.latents_mean.empty()) config.latents_mean.assign(static_cast<size_t>(config.z_dim), 0.0);
    if (config.latents_std.empty()) config.latents_std.assign(static_cast<size_t>(config.z_dim), 1.0);
    // Both parts are drawn whatever is built, so that an encoder alone gets the encoder of the whole.
    auto whole = std::make_shared<QwenImageVae>(config, true, true);
    auto vae = std::make_shared<QwenImageVae>(config, options.encoder, options.decoder);
    torch::Generator gen = compat::makeGenerator(seed);
    std::map<std::string, torch::Tensor> drawn;
    for (const Wanted& w : wantedTensors(*whole)) drawn[w.name] = freshVaeValue(*w.declared, gen);
    for (const Wanted& w : wantedTensors(*vae))
        w.leaf->give(w.declared->name, drawn.at(w.name).to(options.device, options.dtype));
    vae->eval();
    return vae;
}

void saveQwenImageVae(QwenImageVae& vae, const std::string& folder, bool bf16) {
    if (!vae.encoder || !vae.decoder)
        throw std::logic_error("saving a VAE needs both its encoder and its decoder: a folder holds the whole model");
    createDirectories(folder);
    std::vector<torch::Tensor> keep;
    std::vector<TensorData> tensors;
    for (const auto& p : vae.named_parameters()) {
        keep.push_back(p.value().detach().to(torch::kCPU, bf16 ? torch::kBFloat16 : torch::kFloat32).contiguous());
        tensors.push_back({p.key(), bf16 ? Dtype::BF16 : Dtype::F32, keep.back().sizes().vec(), keep.back().data_ptr()});
    }
    writeSafetensors(joinPath(folder, kWeightsFile), tensors);
    writeFileAtomic(joinPath(folder, "config.json"), qwenImageVaeConfigText(vae.config()));
}

} // namespace parallax
