#pragma once

#include "core/captions/ImageCaptions.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// Which pipeline a Qwen-Image folder is (model_index.json's _class_name): what its prompts are
// written as and how many reference images a sample may edit.
enum class QwenImagePipeline { TextToImage, Edit, EditPlus };

// TextToImage for QwenImagePipeline, for a folder without model_index.json (a transformer alone) and
// for any other class; std::invalid_argument naming the file when it is not JSON.
QwenImagePipeline qwenImagePipelineOf(const std::string& pipelineFolder);
const char* qwenImagePipelineClass(QwenImagePipeline pipeline);
// The reference images one sample may give the pipeline: none, one (QwenImageEditPipeline), or any
// number (QwenImageEditPlusPipeline).
int64_t referenceImagesTaken(QwenImagePipeline pipeline);

// std::invalid_argument naming the first sample with more edit_image paths than the pipeline of
// `pipelineFolder` takes (a text-to-image pipeline none, QwenImageEditPipeline one), and the fix.
void requireEditPipeline(const std::vector<CaptionSample>& samples, const std::string& pipelineFolder);
// The same for a folder whose pipeline is already read.
void requireEditPipeline(const std::vector<CaptionSample>& samples, QwenImagePipeline pipeline,
                         const std::string& pipelineFolder);

} // namespace parallax
