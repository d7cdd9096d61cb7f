#include "core/spec/QwenModels.h"

#include "core/spec/CheckedMath.h"
#include "core/spec/ModelStructure.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace parallax {

namespace {

ModelPart partOf(const std::string& name) {
    if (name.rfind("visual.merger.", 0) == 0) return ModelPart::Merger;
    if (name.rfind("visual.", 0) == 0) return ModelPart::Vision;
    return ModelPart::Language;
}

// The Qwen models' structure, each tensor's part read from its name.
struct Structure : ModelStructure {
    Structure() { partOf = parallax::partOf; }
};

int64_t kvWidth(const ModelDims& d) { return saturatingMul(d.kvHeads(), d.headDim()); }

UnitEstimate decoderLayerEstimate(const ModelDims& d) {
    const double C = double(d.dim), F = double(d.ffn), H = double(d.heads), S = double(d.seq_len);
    const double KV = double(kvWidth(d));
    UnitEstimate u;
    u.block = true;
    u.flops = 2.0 * S * (2.0 * C * C + 2.0 * C * KV + 3.0 * C * F) + 4.0 * S * S * C;
    // Kept for backward: both norms' inputs and outputs (replicated); q, k, v, the attention
    // output, gate, SiLU(gate), up and their product (split); the attention probabilities.
    u.actReplicated = 4.0 * S * C;
    u.actSplit = S * (2.0 * C + 2.0 * KV + 4.0 * F) + H * S * S;
    u.scoresSplit = H * S * S;
    u.input = S * C;
    return u;
}

void decoderLayer(Structure& m, const ModelDims& d, const std::string& prefix) {
    const int64_t C = d.dim, F = d.ffn;
    m.unit(decoderLayerEstimate(d));
    m.linear(prefix + ".self_attn.q_proj", C, C, true, TensorSplit::Column);
    m.linear(prefix + ".self_attn.k_proj", C, kvWidth(d), true, TensorSplit::KvColumn);
    m.linear(prefix + ".self_attn.v_proj", C, kvWidth(d), true, TensorSplit::KvColumn);
    m.linear(prefix + ".self_attn.o_proj", C, C, false, TensorSplit::Row);
    m.linear(prefix + ".mlp.gate_proj", C, F, false, TensorSplit::Column);
    m.linear(prefix + ".mlp.up_proj", C, F, false, TensorSplit::Column);
    m.linear(prefix + ".mlp.down_proj", F, C, false, TensorSplit::Row);
    m.tensor(prefix + ".input_layernorm.weight", {C}, TensorSplit::Replicated);
    m.tensor(prefix + ".post_attention_layernorm.weight", {C}, TensorSplit::Replicated);
}

// The token embedding; `input` is what the unit reads per sample, in elements.
void embedding(Structure& m, const ModelDims& d, double input) {
    UnitEstimate u;
    u.input = input;
    m.unit(u);
    m.tensor("model.embed_tokens.weight", {d.vocab, d.dim}, TensorSplit::Vocab);
}

void head(Structure& m, const ModelDims& d) {
    const double C = double(d.dim), S = double(d.seq_len), V = double(d.vocab);
    UnitEstimate u;
    u.flops = 2.0 * S * C * V;
    u.actReplicated = 2.0 * S * C;
    u.actSplit = S * V;
    u.logits = S * V;
    u.input = S * C;
    m.unit(u);
    m.tensor("model.norm.weight", {d.dim}, TensorSplit::Replicated);
    // Tied (tie_word_embeddings): the head holds a copy of embed_tokens that trains with it.
    if (d.tie_embeddings) m.tiedCopy("lm_head.weight", "model.embed_tokens.weight", {d.vocab, d.dim}, TensorSplit::Vocab);
    else m.tensor("lm_head.weight", {d.vocab, d.dim}, TensorSplit::Vocab);
}

void languageModel(Structure& m, const ModelDims& d, double embeddingInput) {
    embedding(m, d, embeddingInput);
    for (int64_t i = 0; i < d.layers; ++i) decoderLayer(m, d, "model.layers." + std::to_string(i));
    head(m, d);
}

Structure qwen2(const ModelDims& d) {
    Structure m;
    languageModel(m, d, double(d.seq_len));
    return m;
}

// Values one patch holds: RGB x frames x patch x patch.
int64_t patchValues(const ModelDims& d) {
    return saturatingMul(saturatingMul(3, d.vision_temporal), saturatingMul(d.patch, d.patch));
}

void visionBlock(Structure& m, const ModelDims& d, int64_t index) {
    const int64_t Cv = d.vision_dim, Fv = d.vision_ffn;
    const double C = double(Cv), F = double(Fv), H = double(d.vision_heads), P = double(d.visionPatches());
    const bool full = std::find(d.vision_full_attention.begin(), d.vision_full_attention.end(), index) !=
                      d.vision_full_attention.end();
    const double side = d.patch > 0 ? double(d.vision_window / d.patch) : 0.0;
    const double W = full ? P : std::min(P, side * side); // keys each patch attends to
    UnitEstimate u;
    u.block = true;
    u.flops = 2.0 * P * (4.0 * C * C + 3.0 * C * F) + 4.0 * P * W * C;
    // Both norms' inputs and outputs, qkv, the attention output, the SwiGLU's four, the probabilities.
    u.actReplicated = P * (8.0 * C + 4.0 * F) + H * P * W;
    u.scoresReplicated = H * P * W;
    u.input = P * C;
    m.unit(u);
    const std::string prefix = "visual.blocks." + std::to_string(index);
    const TensorSplit whole = TensorSplit::Replicated;
    m.tensor(prefix + ".norm1.weight", {Cv}, whole);
    m.tensor(prefix + ".norm2.weight", {Cv}, whole);
    m.linear(prefix + ".attn.qkv", Cv, saturatingMul(3, Cv), true, whole);
    m.linear(prefix + ".attn.proj", Cv, Cv, true, whole);
    m.linear(prefix + ".mlp.gate_proj", Cv, Fv, true, whole);
    m.linear(prefix + ".mlp.up_proj", Cv, Fv, true, whole);
    m.linear(prefix + ".mlp.down_proj", Fv, Cv, true, whole);
}

void visionTower(Structure& m, const ModelDims& d) {
    const double P = double(d.visionPatches()), Q = double(patchValues(d)), Cv = double(d.vision_dim);
    UnitEstimate patch;
    patch.flops = 2.0 * P * Q * Cv;
    patch.actReplicated = P * Q;
    patch.input = P * Q;
    m.unit(patch);
    // A Conv3d whose kernel is its stride: one Linear over each patch's values.
    m.tensor("visual.patch_embed.proj.weight", {d.vision_dim, 3, d.vision_temporal, d.patch, d.patch},
             TensorSplit::Replicated);
    for (int64_t i = 0; i < d.vision_layers; ++i) visionBlock(m, d, i);

    const int64_t merged = saturatingMul(d.vision_dim, saturatingMul(d.vision_merge, d.vision_merge));
    const double M = double(merged), N = double(d.visualTokens()), C = double(d.dim);
    UnitEstimate merger;
    merger.flops = 2.0 * N * (M * M + M * C);
    merger.actReplicated = 2.0 * P * Cv + 2.0 * N * M; // the norm's input and output, GELU's input and output
    merger.input = P * Cv;
    m.unit(merger);
    m.tensor("visual.merger.ln_q.weight", {d.vision_dim}, TensorSplit::Replicated);
    m.linear("visual.merger.mlp.0", merged, merged, true, TensorSplit::Replicated);
    m.linear("visual.merger.mlp.2", merged, d.dim, true, TensorSplit::Replicated);
}

Structure qwen25Vl(const ModelDims& d) {
    Structure m;
    visionTower(m, d);
    // The embedding places the image's N features among the sequence's token embeddings.
    languageModel(m, d, double(d.visualTokens()) * double(d.dim));
    return m;
}

// ---- presets --------------------------------------------------------------------------------

// Special tokens of Qwen's vocabulary (<|im_end|>, <|vision_start|>, <|vision_end|>, <|image_pad|>).
constexpr int64_t kImEnd = 151645, kVisionStart = 151652, kVisionEnd = 151653, kImagePad = 151655;

ModelDims language(int64_t layers, int64_t dim, int64_t heads, int64_t kvHeads, int64_t ffn, int64_t vocab, bool tie,
                   int64_t seq) {
    ModelDims d;
    d.kind = ModelKind::Qwen2;
    d.layers = layers; d.dim = dim; d.heads = heads; d.kv_heads = kvHeads; d.ffn = ffn; d.vocab = vocab;
    d.tie_embeddings = tie;
    d.seq_len = seq;
    d.rope_theta = 1e6;
    d.rms_eps = 1e-6;
    d.max_positions = 32768;
    d.tokens.eos = kImEnd;
    d.image_pixels = DataSpec().max_pixels;
    return d;
}

struct Tower {
    int64_t layers, dim, heads, ffn, window;
    std::vector<int64_t> full;
};

ModelDims withTower(ModelDims d, const Tower& t, std::vector<int64_t> mrope) {
    d.kind = ModelKind::Qwen2_5_Vl;
    d.vision_layers = t.layers; d.vision_dim = t.dim; d.vision_heads = t.heads; d.vision_ffn = t.ffn;
    d.vision_window = t.window;
    d.vision_full_attention = t.full;
    d.channels = 3;
    d.patch = 14;
    d.vision_merge = 2;
    d.vision_temporal = 2;
    d.mrope_section = std::move(mrope);
    d.max_positions = 128000;
    d.tokens = {kImagePad, kVisionStart, kVisionEnd, kImEnd};
    return d;
}

// The published tower: 32 blocks of 1280, 16 heads, windows of 112 pixels, full attention in
// every eighth block.
Tower publishedTower(int64_t ffn) { return {32, 1280, 16, ffn, 112, {7, 15, 23, 31}}; }

} // namespace

std::vector<UnitEstimate> qwen2Units(const ModelDims& dims) { return qwen2(dims).units; }
std::vector<ModelTensor> qwen2Tensors(const ModelDims& dims) { return qwen2(dims).tensors; }
std::vector<UnitEstimate> qwen25VlUnits(const ModelDims& dims) { return qwen25Vl(dims).units; }
std::vector<ModelTensor> qwen25VlTensors(const ModelDims& dims) { return qwen25Vl(dims).tensors; }

// The tiny ones: a language model of 2 layers, 64 wide, 4 heads of 16 (2 key/value heads), SwiGLU
// of 128, Qwen's whole vocabulary (so that the real tokenizer's ids and special tokens fit); the
// tower has 4 blocks of 32, 2 heads, MLP 48, windows of 56 pixels (2 x 2 merged tokens), full
// attention in blocks 1 and 3. "tiny" has its own head like the 7B and larger; "tiny-tied" reuses
// the embedding like the 3B (and Qwen2.5 0.5B and 1.5B).
std::vector<ModelPreset> qwen2Presets() {
    return {{"tiny", language(2, 64, 4, 2, 128, 151936, false, 256)},
            {"tiny-tied", language(2, 64, 4, 2, 128, 151936, true, 256)},
            {"0.5b", language(24, 896, 14, 2, 4864, 151936, true, 2048)},
            {"1.5b", language(28, 1536, 12, 2, 8960, 151936, true, 2048)},
            {"7b", language(28, 3584, 28, 4, 18944, 152064, false, 2048)}};
}

std::vector<ModelPreset> qwen25VlPresets() {
    const Tower tiny = {4, 32, 2, 48, 56, {1, 3}};
    const std::vector<int64_t> mrope = {16, 24, 24};
    return {{"tiny", withTower(language(2, 64, 4, 2, 128, 151936, false, 256), tiny, {2, 3, 3})},
            {"tiny-tied", withTower(language(2, 64, 4, 2, 128, 151936, true, 256), tiny, {2, 3, 3})},
            {"3b", withTower(language(36, 2048, 16, 2, 11008, 151936, true, 2048), publishedTower(3420), mrope)},
            {"7b", withTower(language(28, 3584, 28, 4, 18944, 152064, false, 2048), publishedTower(3420), mrope)},
            {"32b", withTower(language(64, 5120, 40, 8, 27648, 152064, false, 2048), publishedTower(3456), mrope)},
            {"72b", withTower(language(80, 8192, 64, 8, 29568, 152064, false, 2048), publishedTower(3456), mrope)}};
}

} // namespace parallax
