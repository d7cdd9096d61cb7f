#pragma once

#include "core/spec/ModelDims.h"

#include <string>

namespace parallax {

// A Hugging Face model folder's config.json, as a published kind (ModelKinds.h: model_types)
// reads it: the kind its model_type stands for and every size, rotary setting and special token.
struct ModelConfigFile {
    std::string path;      // FOLDER/config.json
    std::string modelType; // its model_type
    ModelDims dims;        // all but seq_len and image_pixels, which a run's spec gives
};

// A config.json holds a few KiB; a larger file is not one.
constexpr int64_t kMaxModelConfigBytes = 16 << 20;

// Reads FOLDER/config.json in either shape: the language model's fields at the top level (Qwen2
// and Qwen2.5-VL as published) or under "text_config" (as transformers 5 writes it; there a field
// is read from text_config first, then from the top level), the rotary settings in "rope_scaling"
// (rope_theta beside it) or in "rope_parameters", the tower's in "vision_config". Throws
// std::invalid_argument naming the file and the key at fault: a folder or file that is missing or
// unreadable, text that is not JSON or nests deeper than any config does, a model_type that no
// kind reads (naming those that are read), a size that is missing or not a positive whole number,
// a setting Parallax does not compute (a rope_scaling type besides mrope, sliding windows).
//
// A diffusers folder: FOLDER/config.json of a transformer (its _class_name names the kind:
// QwenImageTransformer2DModel), or a pipeline folder (model_index.json) whose transformer/ holds it.
ModelConfigFile readModelConfig(const std::string& folder);

// Where a model folder keeps the trained model's config and weights: FOLDER/transformer for a
// diffusers pipeline folder (one with model_index.json), else FOLDER.
std::string modelPartFolder(const std::string& folder);

} // namespace parallax
