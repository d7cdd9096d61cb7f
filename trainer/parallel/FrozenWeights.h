#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>

namespace parallax {

// Moves `model` to `device`. With `productType` set (bf16 autocast on a GPU), every Linear whose
// parameters are all frozen ([finetune]: a frozen part, LoRA's base weights) is held in that type
// only, converted as it moves: nothing updates such a weight, so a full-precision master of it would
// be read by nothing but the products, which read it in `productType` anyway. The products then read
// the weight itself (ProductCopies makes no copy of it), and the model keeps 2 bytes a frozen value
// where it kept 4 plus a 2-byte copy. Embeddings, norms and Linears with any trained parameter keep
// their type. Returns how many values are held in `productType`.
int64_t moveToDevice(torch::nn::Module& model, torch::Device device, std::optional<torch::ScalarType> productType);

} // namespace parallax
