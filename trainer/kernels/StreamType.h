#pragma once

// The element type of the residual stream that the adaLN kernels (LayerNorm,
// modulation, gated residual) read and write: float32, as a stream widened on
// purpose, or bf16, as a stream that bf16 products give (Qwen-Image's image and
// text streams under autocast, and a model kept in bf16). Branches, gates and
// normalized outputs are bf16 either way; statistics and sums are float32.

namespace parallax::kernels {

enum class StreamType { Float32, BFloat16 };

} // namespace parallax::kernels
