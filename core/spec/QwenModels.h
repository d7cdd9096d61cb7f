#pragma once

#include "core/spec/ModelKinds.h"

#include <vector>

namespace parallax {

// The published Qwen architectures, each written once as its parameters (ModelTensors.h) and its
// units, which count their parameters from those tensors:
//
// qwen2 (Qwen2, Qwen2.5 language models): Embedding | decoder layer x L | Head.
// qwen2_5_vl (Qwen2.5-VL): VisionPatchEmbed | vision block x vision_layers | Merger | Embedding |
//   decoder layer x L | Head.
//
// Decoder layer (C = dim, H heads of D = C / H, K key/value heads, F = ffn): RMSNorm, q (C -> C),
// k and v (C -> K D) with bias, o (C -> C) without; RMSNorm, SwiGLU gate and up (C -> F) and down
// (F -> C) without bias. Head: RMSNorm, lm_head (C -> V) without bias; when tie_embeddings a tied
// copy of the embedding's weight (held and trained on the head's stage, not stored). Vision block (Cv, Hv heads, Fv): RMSNorm, fused qkv (Cv -> 3 Cv) and proj
// with bias; RMSNorm, SwiGLU with bias. Patch embedding: one Linear without bias over 3 channels x
// vision_temporal frames x patch x patch values. Merger: RMSNorm, Linear (Cv m^2 -> Cv m^2), GELU,
// Linear (Cv m^2 -> C), m = vision_merge.
//
// Forward FLOPs per sample of S = seq_len positions (visual tokens included), one image of P
// patches at image_pixels merged into N = P / m^2 tokens: 2 per multiply-add of every Linear;
// attention 4 S^2 C per decoder layer, and per vision block 4 P W Cv where W = P for the
// vision_full_attention blocks and the patches of one window, (vision_window / patch)^2, for the
// others.
std::vector<UnitEstimate> qwen2Units(const ModelDims& dims);
std::vector<ModelTensor> qwen2Tensors(const ModelDims& dims);
std::vector<UnitEstimate> qwen25VlUnits(const ModelDims& dims);
std::vector<ModelTensor> qwen25VlTensors(const ModelDims& dims);

// Presets at the published sizes (random initialization), and tiny ones for tests.
std::vector<ModelPreset> qwen2Presets();
std::vector<ModelPreset> qwen25VlPresets();

} // namespace parallax
