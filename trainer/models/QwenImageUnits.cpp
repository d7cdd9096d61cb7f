#include "trainer/models/QwenImageUnits.h"

#include "trainer/compat/TorchCompat.h"
#include "trainer/models/Layers.h"
#include "trainer/models/QwenImageRope.h"
#include "trainer/ops/GatedResidual.h"
#include "trainer/ops/LayerNorm.h"

#include <cmath>

namespace parallax {

namespace {

constexpr double kNormEps = 1e-6; // every LayerNorm and RMSNorm of the transformer

// LayerNorm without affine parameters, then x (1 + scale) + shift; scale, shift (B, C). One fused
// pass on a GPU under bf16 autocast (trainer/ops/LayerNorm.h).
torch::Tensor modulated(const torch::Tensor& x, const torch::Tensor& scale, const torch::Tensor& shift) {
    return modulate(x, scale.unsqueeze(1), shift.unsqueeze(1), kNormEps);
}

std::shared_ptr<Linear> linear(torch::nn::Module& parent, const std::string& name, int64_t in, int64_t out,
                               TensorSplit split, const std::string& loraName) {
    auto layer = parent.register_module(name, std::make_shared<Linear>(in, out, true, kInitStd));
    layer->split = split;
    layer->lora_name = loraName;
    return layer;
}

// One stream's modules under diffusers' names: `prefix` "img" (to_q, to_out.0, img_mod.1, img_mlp)
// or "txt" (add_q_proj, to_add_out, txt_mod.1, txt_mlp).
QwenImageBlock::Stream makeStream(torch::nn::Module& block, torch::nn::Module& attn, const ModelDims& d, bool image) {
    const int64_t c = d.dim;
    const std::string s = image ? "img" : "txt";
    QwenImageBlock::Stream st;
    st.mod = linear(*moduleGroup(block, s + "_mod"), "1", c, 6 * c, TensorSplit::Replicated, s + "_mod.1");
    const char* q = image ? "to_q" : "add_q_proj";
    const char* k = image ? "to_k" : "add_k_proj";
    const char* v = image ? "to_v" : "add_v_proj";
    st.q = linear(attn, q, c, c, TensorSplit::Column, q);
    st.k = linear(attn, k, c, c, TensorSplit::Column, k);
    st.v = linear(attn, v, c, c, TensorSplit::Column, v);
    st.norm_q = attn.register_module(image ? "norm_q" : "norm_added_q", std::make_shared<RmsNorm>(d.headDim(), kNormEps));
    st.norm_k = attn.register_module(image ? "norm_k" : "norm_added_k", std::make_shared<RmsNorm>(d.headDim(), kNormEps));
    st.norm_q->per_head = st.norm_k->per_head = true;
    st.out = image ? linear(*moduleGroup(attn, "to_out"), "0", c, c, TensorSplit::Row, "to_out.0")
                   : linear(attn, "to_add_out", c, c, TensorSplit::Row, "to_add_out");
    auto net = moduleGroup(*moduleGroup(block, s + "_mlp"), "net");
    st.mlp_in = linear(*moduleGroup(*net, "0"), "proj", c, d.ffn, TensorSplit::Column, s + "_mlp.net.0.proj");
    st.mlp_out = linear(*net, "2", d.ffn, c, TensorSplit::Row, s + "_mlp.net.2");
    return st;
}

struct Modulation {
    torch::Tensor shift1, scale1, gate1, shift2, scale2, gate2; // (B, C) each
};

Modulation modulation(Linear& mod, const torch::Tensor& siluTemb) {
    const std::vector<torch::Tensor> m = mod.forward(siluTemb).chunk(6, -1);
    return {m[0], m[1], m[2], m[3], m[4], m[5]};
}

// The image stream's modulation: one for every token, or under zero_cond_t one for the first `made`
// tokens (the image being made) and another for the reference images' tokens after them.
struct ImageModulation {
    Modulation made, references;
    int64_t madeTokens = -1; // -1: `made` for every token

    bool split() const { return madeTokens >= 0; }
    // LayerNorm, then x (1 + scale) + shift of the first (1) or second (2) modulation.
    torch::Tensor modulate(const torch::Tensor& x, int which) const {
        if (!split()) return modulated(x, scaleOf(made, which), shiftOf(made, which));
        const int64_t rest = x.size(1) - madeTokens;
        return torch::cat({modulated(x.narrow(1, 0, madeTokens), scaleOf(made, which), shiftOf(made, which)),
                           modulated(x.narrow(1, madeTokens, rest), scaleOf(references, which),
                                     shiftOf(references, which))},
                          1);
    }
    torch::Tensor gated(const torch::Tensor& x, int which, const torch::Tensor& branch) const {
        if (!split()) return gatedResidual(x, gateOf(made, which).unsqueeze(1), branch);
        const int64_t rest = x.size(1) - madeTokens;
        return torch::cat({gatedResidual(x.narrow(1, 0, madeTokens), gateOf(made, which).unsqueeze(1),
                                         branch.narrow(1, 0, madeTokens)),
                           gatedResidual(x.narrow(1, madeTokens, rest), gateOf(references, which).unsqueeze(1),
                                         branch.narrow(1, madeTokens, rest))},
                          1);
    }

private:
    static const torch::Tensor& scaleOf(const Modulation& m, int which) { return which == 1 ? m.scale1 : m.scale2; }
    static const torch::Tensor& shiftOf(const Modulation& m, int which) { return which == 1 ? m.shift1 : m.shift2; }
    static const torch::Tensor& gateOf(const Modulation& m, int which) { return which == 1 ? m.gate1 : m.gate2; }
};

// temb (B, C), or zero_cond_t's (2 B, C) for a batch of B: the image stream's modulation (split
// after the tokens of the image being made) and the text stream's (the batch's timesteps).
std::pair<ImageModulation, Modulation> modulations(QwenImageBlock& block, const torch::Tensor& temb, int64_t b,
                                                   int64_t made) {
    const torch::Tensor silu = torch::silu(temb);
    ImageModulation image;
    if (temb.size(0) == 2 * b) {
        const Modulation both = modulation(*block.image.mod, silu); // rows: the batch's, then timestep 0's
        const auto half = [b](const torch::Tensor& t, int64_t i) { return t.narrow(0, i * b, b); };
        for (int64_t i = 0; i < 2; ++i)
            (i == 0 ? image.made : image.references) =
                Modulation{half(both.shift1, i), half(both.scale1, i), half(both.gate1, i),
                           half(both.shift2, i), half(both.scale2, i), half(both.gate2, i)};
        image.madeTokens = made;
        return {image, modulation(*block.text.mod, silu.narrow(0, 0, b))};
    }
    image.made = modulation(*block.image.mod, silu);
    return {image, modulation(*block.text.mod, silu)};
}

// q or k of a stream: per-head RMSNorm, then the rotary turn. (B, S, C') -> (B, S, H', D).
torch::Tensor headsOf(const torch::Tensor& y, int64_t headDim, RmsNorm& norm, const torch::Tensor& cos,
                      const torch::Tensor& sin) {
    const torch::Tensor h = y.view({y.size(0), y.size(1), -1, headDim});
    return applyPairRotary(norm.forward(h), cos, sin);
}

torch::Tensor mlp(QwenImageBlock::Stream& s, const torch::Tensor& x, const Modulation& m) {
    const torch::Tensor branch = s.mlp_out->forward(s.mlp_in->forwardGelu(modulated(x, m.scale2, m.shift2)));
    return gatedResidual(x, m.gate2.unsqueeze(1), branch);
}

torch::Tensor mlp(QwenImageBlock::Stream& s, const torch::Tensor& x, const ImageModulation& m) {
    return m.gated(x, 2, s.mlp_out->forward(s.mlp_in->forwardGelu(m.modulate(x, 2))));
}

} // namespace

std::vector<PackedGrid> latentGrids(const Batch& batch) {
    std::vector<PackedGrid> grids = {{batch.images.size(2) / 2, batch.images.size(3) / 2}};
    for (const torch::Tensor& r : batch.reference_latents) grids.push_back({r.size(2) / 2, r.size(3) / 2});
    return grids;
}

torch::Tensor packLatents(const torch::Tensor& latents) {
    const int64_t b = latents.size(0), c = latents.size(1), h = latents.size(2) / 2, w = latents.size(3) / 2;
    return latents.reshape({b, c, h, 2, w, 2}).permute({0, 2, 4, 1, 3, 5}).reshape({b, h * w, c * 4});
}

// ---- embed ----------------------------------------------------------------------------------

QwenImageEmbed::QwenImageEmbed(const ModelDims& d) : m_zeroCondT(d.zero_cond_t) {
    img_in = linear(*this, "img_in", d.patchValues(), d.dim, TensorSplit::Replicated, "");
    txt_norm = register_module("txt_norm", std::make_shared<RmsNorm>(d.text_dim, kNormEps));
    txt_in = linear(*this, "txt_in", d.text_dim, d.dim, TensorSplit::Replicated, "");
    auto embedder = moduleGroup(*moduleGroup(*this, "time_text_embed"), "timestep_embedder");
    linear_1 = linear(*embedder, "linear_1", kTimestepFeatures, d.dim, TensorSplit::Replicated, "");
    linear_2 = linear(*embedder, "linear_2", d.dim, d.dim, TensorSplit::Replicated, "");
}

Activation QwenImageEmbed::forward(const Activation& /*in*/, const Batch& batch) {
    const torch::Tensor sigma = batch.timesteps.to(torch::kFloat32); // (B)
    const torch::Tensor s = sigma.view({-1, 1, 1, 1});
    const torch::Tensor xt = (1.0 - s) * batch.images.to(torch::kFloat32) + s * batch.noise.to(torch::kFloat32);
    torch::Tensor packed = packLatents(xt);
    const int64_t made = packed.size(1);
    if (!batch.reference_latents.empty()) {
        std::vector<torch::Tensor> sequence = {packed};
        for (const torch::Tensor& r : batch.reference_latents) sequence.push_back(packLatents(r.to(torch::kFloat32)));
        packed = torch::cat(sequence, 1); // the image being made, then each reference, unnoised
    }
    return embed(packed, batch.text_states, sigma, made);
}

Activation QwenImageEmbed::embed(const torch::Tensor& packed, const torch::Tensor& textStates, const torch::Tensor& sigma,
                                 int64_t made) {
    // The model's type (float32, or float64 in gradient checks): a norm's, never held in bf16 as a
    // frozen Linear may be (moveToDevice).
    const torch::ScalarType dtype = txt_norm->weight.scalar_type();
    torch::Tensor image = img_in->forward(packed.to(dtype));                                   // (B, P, C)
    torch::Tensor text = txt_in->forward(txt_norm->forward(textStates.to(dtype)));             // (B, T, C)
    torch::Tensor timesteps = sigma.to(torch::kFloat32);                                       // (B)
    // zero_cond_t with reference tokens: timestep 0 too, as diffusers appends timestep * 0.
    if (m_zeroCondT && made > 0 && made < packed.size(1)) timesteps = torch::cat({timesteps, timesteps * 0});
    torch::Tensor temb = linear_2->forward(torch::silu(linear_1->forward(timestepFeatures(timesteps).to(dtype)))); // (B or 2 B, C)
    return {text, image, temb};
}

// ---- block ----------------------------------------------------------------------------------

QwenImageBlock::QwenImageBlock(const ModelDims& d, int64_t index)
    : m_index(index), m_last(index + 1 == d.layers), m_headDim(d.headDim()), m_theta(d.rope_theta),
      m_axes(d.mrope_section) {
    auto attn = moduleGroup(*this, "attn");
    image = makeStream(*this, *attn, d, true);
    text = makeStream(*this, *attn, d, false);
}

Activation QwenImageBlock::forward(const Activation& in, const Batch& batch) {
    torch::Tensor txt = in.at(0), img = in.at(1);
    const torch::Tensor& temb = in.at(2);
    const int64_t b = img.size(0), t = txt.size(1), p = img.size(1), d = m_headDim;
    const std::vector<PackedGrid> grids = latentGrids(batch);
    const QwenImageRotary rot = qwenImageRotary(grids, t, m_axes, m_theta, img.device());
    const auto [mi, mt] = modulations(*this, temb, b, grids.front().tokens());
    const torch::Tensor hi = mi.modulate(img, 1), ht = modulated(txt, mt.scale1, mt.shift1);

    const torch::Tensor qi = headsOf(image.q->forward(hi), d, *image.norm_q, rot.imageCos, rot.imageSin);
    const torch::Tensor ki = headsOf(image.k->forward(hi), d, *image.norm_k, rot.imageCos, rot.imageSin);
    const torch::Tensor vi = image.v->forward(hi).view({b, p, -1, d});
    const torch::Tensor kt = headsOf(text.k->forward(ht), d, *text.norm_k, rot.textCos, rot.textSin);
    const torch::Tensor vt = text.v->forward(ht).view({b, t, -1, d});
    // The last block's text queries feed only the text stream, which nothing reads after it.
    const torch::Tensor q = m_last ? qi : torch::cat({headsOf(text.q->forward(ht), d, *text.norm_q, rot.textCos,
                                                              rot.textSin), qi}, 1);
    const torch::Tensor k = torch::cat({kt, ki}, 1), v = torch::cat({vt, vi}, 1); // (B, T + P, H', D)
    auto heads = [](const torch::Tensor& x) { return x.transpose(1, 2); };       // (B, H', S, D)
    torch::Tensor attended;
    if (batch.attention_mask.defined()) {
        const auto flags = torch::TensorOptions().dtype(torch::kBool).device(img.device());
        const torch::Tensor keys = torch::cat({batch.attention_mask.to(flags), torch::ones({b, p}, flags)}, 1);
        attended = compat::attention(heads(q), heads(k), heads(v),
                                     keys.view({b, 1, 1, t + p}).expand({b, 1, q.size(1), t + p}));
    } else {
        attended = compat::attention(heads(q), heads(k), heads(v), /*causal=*/false);
    }
    attended = attended.transpose(1, 2).reshape({b, q.size(1), -1}); // (B, S', C')
    const int64_t textRows = m_last ? 0 : t;
    img = mi.gated(img, 1, image.out->forward(attended.narrow(1, textRows, p)));
    img = mlp(image, img, mi);
    if (m_last) return {txt, img, temb};
    txt = gatedResidual(txt, mt.gate1.unsqueeze(1), text.out->forward(attended.narrow(1, 0, t)));
    txt = mlp(text, txt, mt);
    return {txt, img, temb};
}

// ---- head -----------------------------------------------------------------------------------

QwenImageHead::QwenImageHead(const ModelDims& d) {
    norm_linear = linear(*moduleGroup(*this, "norm_out"), "linear", d.dim, 2 * d.dim, TensorSplit::Replicated, "");
    proj_out = linear(*this, "proj_out", d.dim, d.patchValues(), TensorSplit::Replicated, "");
}

torch::Tensor QwenImageHead::predict(const torch::Tensor& image, const torch::Tensor& temb) {
    const torch::Tensor batch = temb.narrow(0, 0, image.size(0)); // zero_cond_t's timestep-0 rows: not here
    const std::vector<torch::Tensor> m = norm_linear->forward(torch::silu(batch)).chunk(2, -1); // scale, shift
    return proj_out->forward(modulated(image, m[0], m[1]));
}

Activation QwenImageHead::forward(const Activation& in, const Batch& batch) {
    const int64_t made = latentGrids(batch).front().tokens(); // the reference images' tokens take no loss
    const torch::Tensor v = predict(in.at(1).narrow(1, 0, made), in.at(2)).to(torch::kFloat32); // (B, P, 4 c)
    const torch::Tensor target = packLatents(batch.noise.to(torch::kFloat32) - batch.images.to(torch::kFloat32));
    const torch::Tensor lossSum = (v - target).pow(2).sum();
    const torch::Tensor count = torch::full({}, static_cast<double>(target.numel()),
                                            torch::TensorOptions().dtype(torch::kFloat32).device(lossSum.device()));
    return {lossSum, count};
}

} // namespace parallax
