#include "core/spec/ModelKinds.h"

#include "core/spec/CheckedMath.h"
#include "core/spec/QwenImageModels.h"
#include "core/spec/QwenImageVaeModels.h"
#include "core/spec/QwenModels.h"

#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace parallax {

namespace {

// A parameter count whose sums and products throw instead of overflowing. Within the field
// limits (SpecLimits.h, checked before units are built) every count fits in 64 bits; this is what
// keeps it so should a limit or a formula change.
class Count {
public:
    Count(int64_t value) : m_value(value) {} // NOLINT: implicit, so that formulas read as formulas
    int64_t get() const { return m_value; }
    friend Count operator+(Count a, Count b) { return checked(checkedAdd(a.m_value, b.m_value)); }
    friend Count operator*(Count a, Count b) { return checked(checkedMul(a.m_value, b.m_value)); }

private:
    static Count checked(std::optional<int64_t> value) {
        if (!value)
            throw std::invalid_argument("model: the parameter count does not fit in 64 bits; use smaller model "
                                        "dimensions");
        return *value;
    }
    int64_t m_value;
};

// ---- presets --------------------------------------------------------------------------------

ModelDims gpt(int64_t layers, int64_t dim, int64_t heads, int64_t ffn, int64_t vocab, int64_t seq) {
    ModelDims d;
    d.kind = ModelKind::Gpt;
    d.layers = layers; d.dim = dim; d.heads = heads; d.ffn = ffn; d.vocab = vocab; d.seq_len = seq;
    return d;
}

// ---- units (docs/models.md) -----------------------------------------------------------------

// Pre-norm block of docs/models.md over S tokens.
UnitEstimate transformerBlock(int64_t C, int64_t F, int64_t H, int64_t S) {
    const Count c = C, f = F;
    const double Cd = double(C), Fd = double(F), Hd = double(H), Sd = double(S);
    UnitEstimate u;
    u.block = true;
    u.split = (4 * c * c + 3 * c + 2 * c * f + f).get(); // q, k, v (weight + bias), proj weight, fc1, fc2 weight
    u.replicated = (c + c + 4 * c).get();                // proj and fc2 biases, ln1, ln2
    u.actReplicated = 4.0 * Sd * Cd;
    u.actSplit = Sd * (4 * Cd + 2 * Fd) + Hd * Sd * Sd;
    u.scoresSplit = Hd * Sd * Sd;
    u.input = Sd * Cd;
    u.flops = 2.0 * Sd * (4.0 * Cd * Cd + 2.0 * Cd * Fd) + 4.0 * Sd * Sd * Cd;
    return u;
}

// The output head of a language model over the T positions that predict text: LayerNorm, then
// Linear(C, V) without bias; it reads an input of `inputPositions` positions.
UnitEstimate lmHead(const ModelDims& d, double inputPositions) {
    const Count c = d.dim, v = d.vocab;
    const double Cd = double(d.dim), Td = double(d.seq_len);
    UnitEstimate head;
    head.replicated = (2 * c).get();
    head.split = (c * v).get();
    head.actReplicated = 2.0 * Td * Cd;
    head.actSplit = Td * double(d.vocab);
    head.logits = Td * double(d.vocab);
    head.input = inputPositions * Cd;
    head.flops = 2.0 * Td * Cd * double(d.vocab);
    return head;
}

std::vector<UnitEstimate> gptUnits(const ModelDims& d) {
    const Count c = d.dim, v = d.vocab, t = d.seq_len;
    std::vector<UnitEstimate> units;
    UnitEstimate embedding;
    embedding.split = (v * c).get();      // token embedding
    embedding.replicated = (t * c).get(); // learned positions
    units.push_back(embedding);
    for (int64_t i = 0; i < d.layers; ++i) units.push_back(transformerBlock(d.dim, d.ffn, d.heads, d.seq_len));
    units.push_back(lmHead(d, double(d.seq_len)));
    return units;
}

// Byte-level text (vocab 256) for the small presets so that text files need no tokenizer; the
// large presets use a GPT-2 sized vocabulary padded to a multiple of 128. Built on first use: specs
// held in static variables elsewhere read the kinds' names while they initialize.
const std::vector<ModelKindInfo>& kinds() {
    static const ModelKindInfo rows[] = {
    {ModelKind::Gpt, "gpt", "decoder language model", /*images=*/false, /*vision_tower=*/false,
     /*counts_image_tokens=*/false, Objective::NextToken,
     {{"tiny", gpt(2, 64, 4, 256, 256, 64)},
      {"small", gpt(6, 256, 8, 1024, 256, 256)},
      {"base", gpt(12, 768, 12, 3072, 50304, 1024)},
      {"1b", gpt(24, 2048, 16, 8192, 50304, 1024)}},
     gptUnits},
    {ModelKind::Qwen2_5_Vl, "qwen2_5_vl", "Qwen2.5-VL (vision tower, merger, Qwen2.5 language model)",
     /*images=*/false, /*vision_tower=*/true, /*counts_image_tokens=*/false, Objective::Conversation,
     qwen25VlPresets(), qwen25VlUnits, /*conversations=*/true, {"qwen2_5_vl"},
     {WeightLayout::Flat, WeightLayout::Nested}, qwen25VlTensors, /*trains=*/true},
    {ModelKind::Qwen2, "qwen2", "Qwen2 / Qwen2.5 language model", false, false, false, Objective::NextToken,
     qwen2Presets(), qwen2Units, /*conversations=*/true, {"qwen2"}, {WeightLayout::Flat}, qwen2Tensors,
     /*trains=*/true},
    {ModelKind::QwenImage, "qwen_image", "Qwen-Image diffusion transformer (trains on latents and prompt states)",
     /*images=*/true, /*vision_tower=*/false, /*counts_image_tokens=*/true, Objective::LatentFlow,
     qwenImagePresets(), qwenImageUnits, /*conversations=*/false, {"QwenImageTransformer2DModel"},
     {WeightLayout::Flat}, qwenImageTensors, /*trains=*/true, /*latents=*/true, "diffusion_pytorch_model.safetensors",
     // DiffSynth-Studio's: attention of both streams, the MLPs' outputs and the modulations.
     {"to_q", "to_k", "to_v", "add_q_proj", "add_k_proj", "add_v_proj", "to_out.0", "to_add_out", "img_mlp.net.2",
      "img_mod.1", "txt_mlp.net.2", "txt_mod.1"}},
    {ModelKind::QwenImageVae, "qwen_image_vae", "Qwen-Image's VAE (trains on images: reconstruction and KL)",
     /*images=*/true, /*vision_tower=*/false, /*counts_image_tokens=*/true, Objective::Reconstruction,
     qwenImageVaePresets(), qwenImageVaeUnits},
    };
    static_assert(std::extent_v<decltype(rows)> == kChoiceCount<ModelKind>, "a row per ModelKind");
    static const std::vector<ModelKindInfo> table(std::begin(rows), std::end(rows));
    return table;
}

} // namespace

std::string retiredModelKind(const std::string& name) {
    // The one table of retired kinds: the name a spec wrote and where its runs go now.
    static const std::pair<const char*, const char*> retired[] = {
        {"mmdit", "the look-alike MMDiT was retired: model.kind = \"qwen_image\" trains the published one "
                  "(Qwen-Image's transformer) and \"qwen_image_vae\" its VAE on images"},
    };
    for (const auto& [old, advice] : retired)
        if (name == old) return advice;
    return {};
}

int64_t UnitEstimate::params() const { return (Count(split) + replicated).get(); }

const std::vector<ModelKindInfo>& modelKinds() { return kinds(); }

const ModelKindInfo& modelKindInfo(ModelKind kind) {
    const size_t i = static_cast<size_t>(kind);
    const std::vector<ModelKindInfo>& table = kinds();
    if (i >= table.size() || table[i].kind != kind)
        throw std::invalid_argument("model.kind: kind " + std::to_string(i) +
                                    " is none this build knows (no row in the table of model kinds)");
    return table[i];
}

const ModelKindInfo* modelKindInfo(const Choice<ModelKind>& kind) {
    return kind.known() ? &modelKindInfo(kind.value()) : nullptr;
}

std::vector<std::string> defaultLoraTargets(const Choice<ModelKind>& kind) {
    const ModelKindInfo* info = modelKindInfo(kind);
    return info && !info->lora_targets.empty() ? info->lora_targets : FinetuneSpec().lora_targets;
}

const ModelKindInfo* modelKindOfType(const std::string& modelType) {
    for (const ModelKindInfo& k : kinds())
        for (const std::string& type : k.model_types)
            if (type == modelType) return &k;
    return nullptr;
}

std::string modelKindNames(bool (*has)(const ModelKindInfo&)) {
    std::vector<std::string> names;
    for (const ModelKindInfo& k : kinds())
        if (has(k)) names.push_back(std::string("\"") + k.name + "\"");
    std::string text;
    for (size_t i = 0; i < names.size(); ++i)
        text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
    return text;
}

template <>
const std::vector<std::string>& choiceNames<ModelKind>() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> n;
        for (const ModelKindInfo& k : kinds()) n.emplace_back(k.name);
        return n;
    }();
    return names;
}

} // namespace parallax
