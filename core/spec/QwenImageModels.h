#pragma once

#include "core/spec/ModelKinds.h"

#include <vector>

namespace parallax {

// Qwen-Image's diffusion transformer as published (diffusers' QwenImageTransformer2DModel), written
// once as its parameters (ModelTensors.h, under diffusers' names) and its units:
//
// qwen_image: Embed | block x L | Head.
//
// C = dim = heads x D, F = ffn = 4 C, Dt = text_dim (the text encoder's width), Q = channels x
// patch^2 = 64 values per packed latent token. Embed: img_in (Q -> C), txt_norm (RMSNorm of Dt),
// txt_in (Dt -> C), the timestep MLP (256 -> C, C -> C), all with bias. Block, per stream (image,
// text): a modulation Linear (C -> 6 C) of SiLU(timestep), q, k, v (C -> C) with bias and RMSNorm
// of q and k per head, the attention's output (C -> C) and a GELU-tanh MLP (C -> F -> C), all with
// bias; LayerNorms without affine. Head: norm_out.linear (C -> 2 C), proj_out (C -> Q), with bias.
// The tensor-parallel plan is the published one: q, k, v and the MLP's input split by column, the
// attention's output and the MLP's output by row; modulations, embeddings and the head replicated.
//
// Forward FLOPs per sample of T = seq_len text tokens and P = (image_size / patch)^2 image tokens
// (image_size: the latent's side, an image's side / 8): 2 per multiply-add of every Linear, 4 S^2 C
// of attention per block over S = T + P. The last block computes only what the image stream reads:
// its text stream gives keys and values, no queries, no output projection and no MLP (their
// parameters get no gradient, as in the published model).
std::vector<UnitEstimate> qwenImageUnits(const ModelDims& dims);
std::vector<ModelTensor> qwenImageTensors(const ModelDims& dims);

// The published size (random initialization, for layout and speed work) and tiny ones for tests.
std::vector<ModelPreset> qwenImagePresets();

// The flow-matching timestep shift of Qwen-Image's scheduler for an image of `imageTokens` packed
// tokens: mu interpolated from 0.5 at 256 tokens to 0.9 at 8192; a uniform sigma u becomes
// e^mu / (e^mu + 1 / u - 1).
double qwenImageShiftMu(int64_t imageTokens);

} // namespace parallax
