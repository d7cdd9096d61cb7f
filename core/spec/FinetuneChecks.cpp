#include "core/spec/FinetuneChecks.h"

#include "core/spec/IssueList.h"

#include "core/spec/FinetunePlan.h"
#include "core/spec/ModelKinds.h"
#include "core/spec/SpecFields.h"
#include "core/spec/SpecLimits.h"
#include "core/spec/Suggestions.h"
#include "core/spec/TomlText.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace parallax {

namespace {

const char* const kLoraFields[] = {"finetune.lora_r", "finetune.lora_alpha", "finetune.lora_dropout",
                                   "finetune.rslora", "finetune.lora_targets", "finetune.modules_to_save"};

// The switch that freezes a part, as a spec names it.
const char* freezeField(ModelPart part) {
    switch (part) {
    case ModelPart::Vision: return "finetune.freeze_vision";
    case ModelPart::Merger: return "finetune.freeze_merger";
    case ModelPart::Language: return "finetune.freeze_llm";
    }
    return "";
}

class FinetuneChecker {
public:
    FinetuneChecker(const RunSpec& spec, const ModelDims* dims) : s(spec), f(spec.finetune), m_dims(dims) {}

    std::vector<SpecIssue> run() {
        if (!f.mode.known()) {
            error("finetune.mode", "finetune.mode = " + tomlString(f.mode.name()) + " is unknown; use one of " +
                                       joinList(f.mode.names()) + didYouMean(f.mode.name(), f.mode.names()));
        }
        const ModelKindInfo* kind = modelKindInfo(s.model.kind);
        if (!kind) return std::move(m_out.list);
        if (!publishedModel(*kind)) {
            ignoredEverywhere();
            return std::move(m_out.list);
        }
        if (!kind->vision_tower)
            for (const char* field : {"finetune.freeze_vision", "finetune.freeze_merger"})
                if (changed(field))
                    warn(field, std::string(field) + " is ignored: model.kind = " + tomlString(kind->name) +
                                    " has no vision tower or merger",
                         {"model.kind"});
        const bool lora = f.mode == FinetuneMode::Lora;
        if (!lora) {
            for (const char* field : kLoraFields)
                if (changed(field))
                    warn(field, std::string(field) + " is used only with finetune.mode = \"lora\"; it is ignored here",
                         {"finetune.mode"});
        } else {
            checkLoraValues();
        }
        if (m_dims && f.mode.known()) checkAgainstModel(*kind, lora);
        return std::move(m_out.list);
    }

private:
    const RunSpec& s;
    const FinetuneSpec& f;
    const ModelDims* m_dims;
    IssueList m_out;

    void error(const std::string& field, const std::string& message, std::vector<std::string> related = {}) {
        m_out.error(field, message, std::move(related));
    }
    void warn(const std::string& field, const std::string& message, std::vector<std::string> related = {}) {
        m_out.warn(field, message, std::move(related));
    }

    // Whether the field at `path` differs from its default.
    bool changed(const std::string& path) const {
        RunSpec mine = s, defaults;
        defaults.finetune.lora_targets = defaultLoraTargets(s.model.kind);
        const std::vector<SpecField> a = specFields(mine), b = specFields(defaults);
        for (size_t i = 0; i < a.size(); ++i)
            if (a[i].path() == path) return fieldValueText(a[i].ref) != fieldValueText(b[i].ref);
        return false;
    }

    void ignoredEverywhere() {
        RunSpec mine = s;
        for (const SpecField& field : specFields(mine))
            if (std::string(field.section) == "finetune" && changed(field.path()))
                warn(field.path(), field.path() + " is used only by model.kind = " + modelKindNames(publishedModel) +
                                       "; it is ignored here",
                     {"model.kind"});
    }

    void checkLoraValues() {
        const std::string rank = countProblem("finetune.lora_r", f.lora_r, 1);
        if (!rank.empty()) error("finetune.lora_r", rank);
        if (!(f.lora_alpha > 0) || !std::isfinite(f.lora_alpha))
            error("finetune.lora_alpha", "finetune.lora_alpha = " + tomlDouble(f.lora_alpha) +
                                             " must be a number greater than 0, e.g. 16 (twice the rank)");
        if (!(f.lora_dropout >= 0 && f.lora_dropout < 1))
            error("finetune.lora_dropout", "finetune.lora_dropout = " + tomlDouble(f.lora_dropout) +
                                               " must be in [0, 1), e.g. 0.05");
        if (f.lora_targets.empty())
            error("finetune.lora_targets", "finetune.lora_targets is empty; name the Linears to adapt, e.g. [\"q_proj\", "
                                           "\"k_proj\", \"v_proj\", \"o_proj\", \"gate_proj\", \"up_proj\", \"down_proj\"]");
    }

    void checkAgainstModel(const ModelKindInfo& kind, bool lora) {
        const std::vector<ModelTensor> tensors = kind.tensors(*m_dims);
        if (lora) {
            checkTargets(kind, tensors);
            checkModulesToSave(tensors);
        }
        bool trains = false;
        for (const TensorTraining& t : planFinetune(tensors, f)) trains |= t.trains || t.adapter || t.saved;
        if (trains) return;
        if (lora)
            error("finetune.lora_targets", "no Linear that finetune.lora_targets names lies in a part that is not "
                                           "frozen, and finetune.modules_to_save names none: nothing would train; set "
                                           "finetune.freeze_llm = false (the language model's Linears get adapters)",
                  {"finetune.freeze_vision", "finetune.freeze_merger", "finetune.freeze_llm", "finetune.modules_to_save"});
        else
            error("finetune.freeze_llm", std::string("every part of the model is frozen (") +
                                             (kind.vision_tower ? "finetune.freeze_vision, freeze_merger and freeze_llm"
                                                                : "finetune.freeze_llm") +
                                             "): nothing would train; set finetune.freeze_llm = false",
                  {"finetune.freeze_vision", "finetune.freeze_merger", "finetune.mode"});
    }

    void checkTargets(const ModelKindInfo& kind, const std::vector<ModelTensor>& tensors) {
        // The names that would adapt something first: they are what a typo most likely meant.
        std::vector<std::string> names = loraTargetNames(tensors);
        std::stable_partition(names.begin(), names.end(), [&](const std::string& name) {
            for (const ModelTensor& t : tensors)
                if (t.adaptable && !partFrozen(t.part, f) && moduleNamed(t.module(), name)) return true;
            return false;
        });
        for (size_t i = 0; i < f.lora_targets.size(); ++i) {
            const std::string& target = f.lora_targets[i];
            const std::string field = "finetune.lora_targets[" + std::to_string(i) + "] = " + tomlString(target);
            const auto earlier = f.lora_targets.begin() + long(i);
            if (std::find(f.lora_targets.begin(), earlier, target) != earlier) {
                warn("finetune.lora_targets", field + " is named twice; once is enough");
                continue;
            }
            std::map<ModelPart, bool> parts; // the parts whose Linears it names
            for (const ModelTensor& t : tensors)
                if (t.adaptable && moduleNamed(t.module(), target)) parts[t.part] = true;
            if (parts.empty()) {
                error("finetune.lora_targets", field + " is no Linear of model.kind = " + tomlString(kind.name) +
                                                   " that LoRA adapts; its Linears are " + joinList(names) +
                                                   didYouMean(target, names),
                      {"model.kind"});
                continue;
            }
            std::vector<std::string> frozen, fields;
            for (const auto& [part, named] : parts) {
                if (!partFrozen(part, f)) {
                    frozen.clear();
                    break;
                }
                frozen.push_back(partName(part));
                fields.push_back(freezeField(part));
            }
            if (!frozen.empty())
                error("finetune.lora_targets",
                      field + " names Linears of the " + joinList(frozen, " and ") + " only, which " +
                          joinList(fields, " and ") + " = true freezes: set " + fields.front() +
                          " = false to adapt them, or remove it",
                      fields);
        }
    }

    void checkModulesToSave(const std::vector<ModelTensor>& tensors) {
        for (size_t i = 0; i < f.modules_to_save.size(); ++i) {
            const std::string& name = f.modules_to_save[i];
            const std::string field = "finetune.modules_to_save[" + std::to_string(i) + "] = " + tomlString(name);
            const ModelTensor* found = nullptr;
            for (const ModelTensor& t : tensors)
                if (moduleWithin(t.module(), name)) found = found ? found : &t;
            if (!found) {
                error("finetune.modules_to_save", field + " is no module of the model; name one as the checkpoint "
                                                          "does, e.g. embed_tokens, lm_head, merger");
                continue;
            }
            if (partFrozen(found->part, f))
                warn("finetune.modules_to_save", field + " lies in the " + partName(found->part) + ", which " +
                                                     freezeField(found->part) +
                                                     " = true freezes; a whole copy of it trains all the same",
                     {freezeField(found->part)});
        }
        checkTiedModulesSaved(tensors);
    }

    // A tied copy and its source are one weight (tie_word_embeddings): both train or neither.
    void checkTiedModulesSaved(const std::vector<ModelTensor>& tensors) {
        auto saved = [this](const std::string& module) {
            for (const std::string& name : f.modules_to_save)
                if (moduleWithin(module, name)) return true;
            return false;
        };
        for (const ModelTensor& copy : tensors) {
            if (!copy.tiedCopy()) continue;
            const std::string source = copy.tiedTo.substr(0, copy.tiedTo.rfind('.'));
            if (saved(copy.module()) == saved(source)) continue;
            const std::string named = saved(source) ? source : copy.module(), other = saved(source) ? copy.module() : source;
            error("finetune.modules_to_save",
                  "finetune.modules_to_save trains " + named + " but not " + other + ", which this model ties to it "
                  "(tie_word_embeddings = true): they are one weight; name both or neither");
        }
    }
};

} // namespace

std::vector<SpecIssue> finetuneIssues(const RunSpec& spec, const ModelDims* dims) {
    return FinetuneChecker(spec, dims).run();
}

} // namespace parallax
