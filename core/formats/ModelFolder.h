#pragma once

#include <string>
#include <vector>

namespace parallax {

// What a model folder says it is, read from its config files without loading anything:
// transformers' config.json (model_type, architectures) or diffusers' model_index.json (_class_name
// and the components it lists, each a subfolder with a config.json of its own).
struct ModelFolder {
    struct Component {
        std::string name;      // the subfolder: "transformer", "vae", "text_encoder", ...
        std::string library;   // "diffusers", "transformers"
        std::string className; // "QwenImageTransformer2DModel"
    };

    std::string path;
    std::string layout;                     // "transformers", "diffusers", or "" when neither file is there
    std::string modelType;                  // config.json model_type
    std::vector<std::string> architectures; // config.json architectures
    std::string className;                  // _class_name of config.json or model_index.json
    std::vector<Component> components;      // model_index.json, in its order
};

// Reads `folder`'s config.json or model_index.json (model_index.json first). Throws FormatError
// naming the file when it is not a JSON object or a field has the wrong type.
ModelFolder readModelFolder(const std::string& folder);

// "qwen2 (Qwen2ForCausalLM)", "QwenImagePipeline"; "" when the folder names nothing.
std::string describeModel(const ModelFolder& folder);

} // namespace parallax
