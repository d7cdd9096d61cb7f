#include "core/spec/FinetuneSummary.h"

#include "core/spec/CheckedMath.h"
#include "core/spec/FinetunePlan.h"
#include "core/spec/ModelDims.h"
#include "core/spec/ModelKinds.h"

#include <algorithm>

namespace parallax {

namespace {

bool published(const RunSpec& spec) {
    const ModelKindInfo* kind = modelKindInfo(spec.model.kind);
    return kind != nullptr && publishedModel(*kind);
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

} // namespace

std::vector<PartTraining> partTraining(const ModelDims& dims, const FinetuneSpec& finetune) {
    const ModelKindInfo& kind = modelKindInfo(dims.kind);
    if (!publishedModel(kind)) return {};
    const std::vector<ModelTensor> tensors = kind.tensors(dims);
    const std::vector<TensorTraining> plan = planFinetune(tensors, finetune);
    const int64_t r = std::max<int64_t>(0, finetune.lora_r);
    std::vector<PartTraining> parts;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const ModelTensor& t = tensors[i];
        if (t.tiedCopy()) continue;
        auto it = std::find_if(parts.begin(), parts.end(), [&t](const PartTraining& p) { return p.part == t.part; });
        if (it == parts.end()) {
            parts.push_back({});
            parts.back().part = t.part;
            it = parts.end() - 1;
        }
        const int64_t n = t.elements();
        it->elements = saturatingAdd(it->elements, n);
        if (plan[i].trains) it->trained = saturatingAdd(it->trained, n);
        if (plan[i].saved) it->saved = saturatingAdd(it->saved, n);
        if (plan[i].adapter && t.shape.size() == 2) {
            it->adapters = saturatingAdd(it->adapters, saturatingMul(r, saturatingAdd(t.shape[0], t.shape[1])));
            const std::string name = loraTargetName(t);
            if (std::find(it->adapted.begin(), it->adapted.end(), name) == it->adapted.end()) it->adapted.push_back(name);
        }
    }
    std::sort(parts.begin(), parts.end(),
              [](const PartTraining& a, const PartTraining& b) { return static_cast<int>(a.part) < static_cast<int>(b.part); });
    return parts;
}

std::string describePartTraining(const PartTraining& part, const FinetuneSpec& finetune) {
    const std::string name = partName(part.part);
    const std::string size = " (" + formatCount(static_cast<double>(part.elements)) + ")";
    if (part.frozen()) return name + ": frozen" + size;
    if (finetune.mode == FinetuneMode::Full) return name + ": trains" + size;
    std::string out = name + ": ";
    if (part.adapters > 0)
        out += std::string(finetune.rslora ? "rsLoRA" : "LoRA") + " r " + std::to_string(finetune.lora_r) + " on " +
               joined(part.adapted) + " (" + formatCount(static_cast<double>(part.adapters)) + " adapter parameters)";
    if (part.saved > 0)
        out += std::string(part.adapters > 0 ? "; " : "") + "copies trained whole (" +
               formatCount(static_cast<double>(part.saved)) + ")";
    return out + "; its " + formatCount(static_cast<double>(part.elements)) + " weights frozen";
}

std::vector<FinetuneMemoryRow> finetuneMemoryRows(const RunSpec& spec) {
    if (!published(spec)) return {};
    std::vector<FinetuneMemoryRow> rows;
    const auto add = [&](const std::string& label, const FinetuneSpec& finetune, bool current) {
        RunSpec variant = spec;
        variant.finetune = finetune;
        rows.push_back({label, finetune, estimate(variant), current});
    };
    FinetuneSpec everything = spec.finetune;
    everything.mode = FinetuneMode::Full;
    everything.freeze_vision = everything.freeze_merger = everything.freeze_llm = false;
    everything.modules_to_save.clear();

    std::vector<std::string> frozen;
    for (const PartTraining& p : partTraining(resolveModel(spec), spec.finetune))
        if (partFrozen(p.part, spec.finetune)) frozen.push_back(partName(p.part));
    const bool full = spec.finetune.mode == FinetuneMode::Full;
    add("full", everything, full && frozen.empty());
    if (!frozen.empty()) {
        FinetuneSpec partly = spec.finetune;
        partly.mode = FinetuneMode::Full;
        std::string label = "full, " + joined(frozen) + " frozen";
        add(label, partly, full);
    }
    FinetuneSpec lora = spec.finetune;
    lora.mode = FinetuneMode::Lora;
    add(std::string(lora.rslora ? "rsLoRA" : "LoRA") + " r " + std::to_string(lora.lora_r), lora, !full);
    return rows;
}

} // namespace parallax
