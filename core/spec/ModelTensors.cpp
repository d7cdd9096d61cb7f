#include "core/spec/ModelTensors.h"

#include "core/spec/CheckedMath.h"

namespace parallax {

namespace {

bool startsWith(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

} // namespace

int64_t ModelTensor::elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n = saturatingMul(n, d);
    return n;
}

std::string ModelTensor::module() const {
    const size_t dot = name.rfind('.');
    return dot == std::string::npos ? name : name.substr(0, dot);
}

bool moduleNamed(const std::string& module, const std::string& name) {
    if (name.empty() || module.size() < name.size()) return false;
    if (module.size() == name.size()) return module == name;
    return module.compare(module.size() - name.size(), name.size(), name) == 0 &&
           module[module.size() - name.size() - 1] == '.';
}

bool moduleWithin(const std::string& module, const std::string& name) {
    for (size_t end = module.find('.'); end != std::string::npos; end = module.find('.', end + 1))
        if (moduleNamed(module.substr(0, end), name)) return true;
    return moduleNamed(module, name);
}

std::string layoutName(const std::string& flatName, WeightLayout layout) {
    if (layout == WeightLayout::Flat) return flatName;
    if (startsWith(flatName, "visual.")) return "model." + flatName;
    if (startsWith(flatName, "model.")) return "model.language_model." + flatName.substr(6);
    return flatName; // lm_head.*
}

const char* layoutDescription(WeightLayout layout) {
    return layout == WeightLayout::Flat ? "model.* / visual.*" : "model.language_model.* / model.visual.*";
}

const char* partName(ModelPart part) {
    switch (part) {
    case ModelPart::Vision: return "vision tower";
    case ModelPart::Merger: return "merger";
    case ModelPart::Language: return "language model";
    }
    return "";
}

} // namespace parallax
