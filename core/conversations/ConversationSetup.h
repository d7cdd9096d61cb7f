#pragma once

#include "core/conversations/ConversationEncoder.h"
#include "core/spec/ModelDims.h"
#include "core/spec/RunSpec.h"
#include "core/text/Tokenizer.h"

#include <string>

namespace parallax {

// What a sample of data.kind = "conversations" may take for a model of `dims`: model.seq_len tokens,
// images resized between data.min_pixels and data.max_pixels to multiples of patch x merge, and
// images at all only where the model has a vision tower. The worker's dataset and the console's
// preview read a dataset with the same limits.
ConversationLimits conversationLimits(const DataSpec& data, const ModelDims& dims);

// The tokenizer of model.from (`source`: a tokenizer.json or a folder holding a tokenizer), checked
// against the model it feeds: every id within the model's vocabulary, and the image tokens as
// config.json numbers them. Throws ConversationError whose message names the field or file and the
// fix.
Tokenizer conversationTokenizer(const std::string& source, const ModelDims& dims);

} // namespace parallax
