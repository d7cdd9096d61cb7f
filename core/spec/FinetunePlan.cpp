#include "core/spec/FinetunePlan.h"

#include "core/spec/CheckedMath.h"

#include <algorithm>

namespace parallax {

namespace {

bool named(const std::string& module, const std::vector<std::string>& names, bool within) {
    for (const std::string& name : names)
        if (within ? moduleWithin(module, name) : moduleNamed(module, name)) return true;
    return false;
}

bool isNumber(const std::string& text) {
    return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

bool splitsOutput(TensorSplit split) { return split == TensorSplit::Column || split == TensorSplit::KvColumn; }

} // namespace

bool partFrozen(ModelPart part, const FinetuneSpec& finetune) {
    switch (part) {
    case ModelPart::Vision: return finetune.freeze_vision;
    case ModelPart::Merger: return finetune.freeze_merger;
    case ModelPart::Language: return finetune.freeze_llm;
    }
    return true;
}

std::vector<TensorTraining> planFinetune(const std::vector<ModelTensor>& tensors, const FinetuneSpec& finetune) {
    const bool lora = finetune.mode == FinetuneMode::Lora;
    std::vector<TensorTraining> plan(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
        const ModelTensor& t = tensors[i];
        TensorTraining& p = plan[i];
        if (!lora) {
            p.trains = !partFrozen(t.part, finetune);
            continue;
        }
        const std::string module = t.module();
        p.saved = named(module, finetune.modules_to_save, true);
        p.adapter = !p.saved && t.adaptable && !partFrozen(t.part, finetune) &&
                    named(module, finetune.lora_targets, false);
    }
    return plan;
}

std::string loraTargetName(const ModelTensor& tensor) {
    const std::string module = tensor.module();
    const size_t last = module.rfind('.');
    if (last == std::string::npos) return module;
    if (!isNumber(module.substr(last + 1))) return module.substr(last + 1);
    const size_t before = module.rfind('.', last - 1);
    return before == std::string::npos ? module : module.substr(before + 1);
}

std::vector<std::string> loraTargetNames(const std::vector<ModelTensor>& tensors) {
    std::vector<std::string> names;
    for (const ModelTensor& t : tensors) {
        if (!t.adaptable) continue;
        const std::string name = loraTargetName(t);
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
    return names;
}

void applyFinetune(std::vector<UnitEstimate>& units, const std::vector<ModelTensor>& tensors,
                   const FinetuneSpec& finetune) {
    const std::vector<TensorTraining> plan = planFinetune(tensors, finetune);
    const int64_t r = std::max<int64_t>(0, finetune.lora_r);
    for (size_t i = 0; i < tensors.size(); ++i) {
        const ModelTensor& t = tensors[i];
        if (t.unit < 0 || static_cast<size_t>(t.unit) >= units.size()) continue;
        UnitEstimate& u = units[static_cast<size_t>(t.unit)];
        const bool split = t.split != TensorSplit::Replicated;
        const int64_t n = t.elements();
        if (!plan[i].trains) (split ? u.frozenSplit : u.frozenReplicated) += n;
        if (plan[i].saved) (split ? u.adapterSplit : u.adapterReplicated) += n;
        if (plan[i].adapter && t.shape.size() == 2) {
            const int64_t a = saturatingMul(r, t.shape[1]), b = saturatingMul(t.shape[0], r); // A (r, in), B (out, r)
            const bool splitsA = t.split == TensorSplit::Row, splitsB = splitsOutput(t.split);
            (splitsA ? u.adapterSplit : u.adapterReplicated) += a;
            (splitsB ? u.adapterSplit : u.adapterReplicated) += b;
        }
    }
}

} // namespace parallax
