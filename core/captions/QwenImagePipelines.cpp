#include "core/captions/QwenImagePipelines.h"

#include "core/util/Files.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace parallax {

const char* qwenImagePipelineClass(QwenImagePipeline pipeline) {
    switch (pipeline) {
    case QwenImagePipeline::TextToImage: return "QwenImagePipeline";
    case QwenImagePipeline::Edit: return "QwenImageEditPipeline";
    case QwenImagePipeline::EditPlus: return "QwenImageEditPlusPipeline";
    }
    return "QwenImagePipeline";
}

int64_t referenceImagesTaken(QwenImagePipeline pipeline) {
    switch (pipeline) {
    case QwenImagePipeline::TextToImage: return 0;
    case QwenImagePipeline::Edit: return 1;
    case QwenImagePipeline::EditPlus: return int64_t(1) << 20;
    }
    return 0;
}

QwenImagePipeline qwenImagePipelineOf(const std::string& pipelineFolder) {
    const std::string index = joinPath(pipelineFolder, "model_index.json");
    if (!isRegularFile(index)) return QwenImagePipeline::TextToImage;
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(readFile(index));
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument(index + ": not JSON (" + e.what() + ")");
    }
    const std::string name = j.is_object() && j.value("_class_name", nlohmann::json()).is_string()
                                 ? j["_class_name"].get<std::string>()
                                 : std::string();
    for (QwenImagePipeline p : {QwenImagePipeline::Edit, QwenImagePipeline::EditPlus})
        if (name == qwenImagePipelineClass(p)) return p;
    return QwenImagePipeline::TextToImage;
}

void requireEditPipeline(const std::vector<CaptionSample>& samples, const std::string& pipelineFolder) {
    requireEditPipeline(samples, qwenImagePipelineOf(pipelineFolder), pipelineFolder);
}

void requireEditPipeline(const std::vector<CaptionSample>& samples, QwenImagePipeline pipeline,
                         const std::string& pipelineFolder) {
    const int64_t most = referenceImagesTaken(pipeline);
    for (const CaptionSample& s : samples) {
        const int64_t n = static_cast<int64_t>(s.edit_images.size());
        if (n <= most) continue;
        throw std::invalid_argument(
            s.source + ": " + std::to_string(n) + " edit_image path" + (n > 1 ? "s" : "") + ", and model.from (" +
            pipelineFolder + ") is a " + qwenImagePipelineClass(pipeline) +
            (most == 0 ? ", which makes images from text alone; train on reference images with a Qwen-Image-Edit "
                         "pipeline folder (model_index.json's _class_name QwenImageEditPipeline, or "
                         "QwenImageEditPlusPipeline for several images)"
                       : ", which takes one reference image; use a QwenImageEditPlusPipeline folder for several"));
    }
}

} // namespace parallax
