#include "trainer/models/JointBlock.h"

#include "trainer/ops/GatedResidual.h"
#include "trainer/ops/LayerNorm.h"

namespace parallax {

namespace {

struct Modulation {
    torch::Tensor shift1, scale1, gate1, shift2, scale2, gate2; // (B, 1, C) each
};

Modulation modulation(JointStream& stream, const torch::Tensor& conditioning) {
    if (stream.context_only) {
        std::vector<torch::Tensor> m = stream.mod->forward(conditioning).unsqueeze(1).chunk(2, -1); // 2 x (B, 1, C)
        return {m[0], m[1], {}, {}, {}, {}};
    }
    std::vector<torch::Tensor> m = stream.mod->forward(conditioning).unsqueeze(1).chunk(6, -1); // 6 x (B, 1, C)
    return {m[0], m[1], m[2], m[3], m[4], m[5]};
}

} // namespace

JointBlock::JointBlock(const ModelDims& dims, bool last) : m_dims(dims), m_last(last) {
    text = register_module("text", std::make_shared<JointStream>(dims.dim, dims.ffn, dims.layers, last));
    image = register_module("image", std::make_shared<JointStream>(dims.dim, dims.ffn, dims.layers));
}

Activation JointBlock::forward(const Activation& in, const Batch& /*batch*/) {
    torch::Tensor xt = in.at(0); // (B, T, C)
    torch::Tensor xi = in.at(1); // (B, P, C)
    const torch::Tensor& c = in.at(2); // (B, C)
    torch::Tensor sc = torch::silu(c);
    const Modulation mt = modulation(*text, sc);
    const Modulation mi = modulation(*image, sc);

    torch::Tensor ht = modulate(xt, mt.scale1, mt.shift1); // (B, T, C)
    torch::Tensor hi = modulate(xi, mi.scale1, mi.shift1); // (B, P, C)
    // The last block's text stream has no queries; every other stream projects q, k, v at once.
    const std::vector<torch::Tensor> pt = m_last ? linearStack(ht, {text->k.get(), text->v.get()})
                                                 : linearStack(ht, {text->q.get(), text->k.get(), text->v.get()});
    const std::vector<torch::Tensor> pi = linearStack(hi, {image->q.get(), image->k.get(), image->v.get()});
    const size_t kt = m_last ? 0 : 1; // index of k in pt
    torch::Tensor k = torch::cat({pt[kt], pi[1]}, 1); // (B, T+P, C)
    torch::Tensor v = torch::cat({pt[kt + 1], pi[2]}, 1);
    auto mlp = [](JointStream& s, const torch::Tensor& x, const Modulation& m) {
        return gatedResidual(x, m.gate2, s.fc2->forward(s.fc1->forwardGelu(modulate(x, m.scale2, m.shift2))));
    };
    const int64_t t = xt.size(1);
    if (m_last) {
        // Only the image tokens query; the text stream ends here.
        torch::Tensor attn = multiHeadAttention(pi[0], k, v, m_dims.headDim(), false); // (B, P, C)
        xi = gatedResidual(xi, mi.gate1, image->proj->forward(attn));
        xi = mlp(*image, xi, mi);
        return {xt, xi, c};
    }
    torch::Tensor q = torch::cat({pt[0], pi[0]}, 1); // (B, T+P, C)
    torch::Tensor attn = multiHeadAttention(q, k, v, m_dims.headDim(), /*causal=*/false); // (B, T+P, C)
    // One split, not two slices: backward then joins the two gradients in one pass instead of
    // building a zero-filled gradient of the whole attention output per slice and adding them.
    const std::vector<torch::Tensor> streams = torch::split_with_sizes(attn, {t, xi.size(1)}, 1);
    xt = gatedResidual(xt, mt.gate1, text->proj->forward(streams[0]));
    xi = gatedResidual(xi, mi.gate1, image->proj->forward(streams[1]));
    xt = mlp(*text, xt, mt);
    xi = mlp(*image, xi, mi);
    return {xt, xi, c};
}

} // namespace parallax
