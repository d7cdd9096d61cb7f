#include "core/spec/QwenImageModels.h"

#include "core/spec/CheckedMath.h"
#include "core/spec/ModelStructure.h"

#include <string>

namespace parallax {

namespace {

int64_t latentValues(const ModelDims& d) { return d.patchValues(); }

void embed(ModelStructure& m, const ModelDims& d) {
    const double C = double(d.dim), Q = double(latentValues(d)), P = double(d.imageTokens());
    const double T = double(d.seq_len), Dt = double(d.text_dim);
    UnitEstimate u;
    u.flops = 2.0 * (P * Q * C + T * Dt * C + 256.0 * C + C * C);
    u.actReplicated = 2.0 * P * Q + 2.0 * T * Dt + 256.0 + 2.0 * C;
    u.input = 2.0 * P * Q + T * Dt; // latents and noise, the prompt's states
    m.unit(u);
    const TensorSplit whole = TensorSplit::Replicated;
    m.linear("img_in", latentValues(d), d.dim, true, whole);
    m.tensor("txt_norm.weight", {d.text_dim}, whole);
    m.linear("txt_in", d.text_dim, d.dim, true, whole);
    m.linear("time_text_embed.timestep_embedder.linear_1", 256, d.dim, true, whole);
    m.linear("time_text_embed.timestep_embedder.linear_2", d.dim, d.dim, true, whole);
}

UnitEstimate blockEstimate(const ModelDims& d, bool last) {
    const double C = double(d.dim), F = double(d.ffn), H = double(d.heads);
    const double T = double(d.seq_len), P = double(d.imageTokens()), S = T + P;
    UnitEstimate u;
    u.block = true;
    u.input = S * C + C;
    // What backward keeps, per token and stream: the replicated width's LayerNorm inputs, their
    // normalized and modulated values and the two branches' outputs (8 C); of the split width, q
    // and k with their RMSNorms' intermediates, the q, k and v handed to attention and its output
    // (12 C), and the MLP's hidden values before and after the GELU (2 F). Fitted to the worker's
    // peaks with and without checkpointing on a CPU (20.1 C + 2.0 F a token over four shapes) and
    // on an H100 in bf16 (0.70 GiB a kept block at 1024 x 1024, 0.68 GiB counted).
    if (!last) {
        u.flops = 2.0 * (12.0 * C * C + S * (4.0 * C * C + 2.0 * C * F)) + 4.0 * S * S * C;
        u.actReplicated = 8.0 * S * C + 4.0 * C;
        u.actSplit = S * (12.0 * C + 2.0 * F) + H * S * S;
        u.scoresSplit = H * S * S;
        return u;
    }
    // The text stream gives keys and values only; the image stream's queries read all S keys.
    u.flops = 2.0 * (12.0 * C * C + 2.0 * T * C * C + P * (4.0 * C * C + 2.0 * C * F)) + 4.0 * P * S * C;
    u.actReplicated = 4.0 * S * C + 4.0 * P * C + 4.0 * C;
    u.actSplit = P * (12.0 * C + 2.0 * F) + 6.0 * T * C + H * P * S;
    u.scoresSplit = H * P * S;
    return u;
}

void block(ModelStructure& m, const ModelDims& d, int64_t index) {
    m.unit(blockEstimate(d, index + 1 == d.layers));
    const std::string p = "transformer_blocks." + std::to_string(index) + ".";
    const int64_t C = d.dim, D = d.headDim();
    const TensorSplit whole = TensorSplit::Replicated, column = TensorSplit::Column, row = TensorSplit::Row;
    m.linear(p + "img_mod.1", C, saturatingMul(6, C), true, whole);
    m.linear(p + "txt_mod.1", C, saturatingMul(6, C), true, whole);
    for (const char* name : {"to_q", "to_k", "to_v", "add_q_proj", "add_k_proj", "add_v_proj"})
        m.linear(p + "attn." + name, C, C, true, column);
    for (const char* name : {"norm_q", "norm_k", "norm_added_q", "norm_added_k"})
        m.tensor(p + "attn." + name + ".weight", {D}, whole);
    m.linear(p + "attn.to_out.0", C, C, true, row);
    m.linear(p + "attn.to_add_out", C, C, true, row);
    for (const char* stream : {"img_mlp", "txt_mlp"}) {
        m.linear(p + stream + ".net.0.proj", C, d.ffn, true, column);
        m.linear(p + stream + ".net.2", d.ffn, C, true, row);
    }
}

void head(ModelStructure& m, const ModelDims& d) {
    const double C = double(d.dim), Q = double(latentValues(d)), P = double(d.imageTokens());
    UnitEstimate u;
    u.flops = 2.0 * (2.0 * C * C + P * C * Q);
    u.actReplicated = 3.0 * P * C + C + 2.0 * P * Q;
    u.input = double(d.seq_len + d.imageTokens()) * C + C;
    m.unit(u);
    m.linear("norm_out.linear", d.dim, saturatingMul(2, d.dim), true, TensorSplit::Replicated);
    m.linear("proj_out", d.dim, latentValues(d), true, TensorSplit::Replicated);
}

ModelStructure structure(const ModelDims& d) {
    ModelStructure m;
    embed(m, d);
    for (int64_t i = 0; i < d.layers; ++i) block(m, d, i);
    head(m, d);
    return m;
}

// heads x headDim wide, rotary axes of (frame, row, column) pairs summing to headDim / 2, the
// text encoder's width, text tokens, the latent's side.
ModelDims dit(int64_t layers, int64_t heads, int64_t headDim, std::vector<int64_t> axes, int64_t textDim,
              int64_t seq, int64_t latentSide) {
    ModelDims d;
    d.kind = ModelKind::QwenImage;
    d.layers = layers;
    d.heads = heads;
    d.dim = heads * headDim;
    d.ffn = 4 * d.dim;
    d.text_dim = textDim;
    d.seq_len = seq;
    d.image_size = latentSide;
    d.channels = 16;
    d.patch = 2;
    d.mrope_section = std::move(axes);
    d.rope_theta = 10000;
    d.rms_eps = 1e-6;
    return d;
}

} // namespace

std::vector<UnitEstimate> qwenImageUnits(const ModelDims& dims) { return structure(dims).units; }
std::vector<ModelTensor> qwenImageTensors(const ModelDims& dims) { return structure(dims).tensors; }

// "tiny": 2 blocks of 2 heads of 32 (rotary pairs 4, 6, 6), prompt states of 48, 16 text tokens,
// latents of 12 x 12 (a 96-pixel image). The published transformer: 60 blocks of 24 heads of 128
// (rotary axes 16, 56, 56), Qwen2.5-VL-7B's 3584-wide states, 1024 prompt tokens at most; sized at
// a 1024 x 1024 image (latents of 128 x 128: 4096 tokens). "20b-512px" at 512 x 512.
std::vector<ModelPreset> qwenImagePresets() {
    return {{"tiny", dit(2, 2, 32, {4, 6, 6}, 48, 16, 12)},
            {"20b-512px", dit(60, 24, 128, {8, 28, 28}, 3584, 256, 64)},
            {"20b", dit(60, 24, 128, {8, 28, 28}, 3584, 256, 128)}};
}

double qwenImageShiftMu(int64_t imageTokens) {
    const double base = 256, max = 8192, baseShift = 0.5, maxShift = 0.9;
    const double slope = (maxShift - baseShift) / (max - base);
    return double(imageTokens) * slope + (baseShift - slope * base);
}

} // namespace parallax
