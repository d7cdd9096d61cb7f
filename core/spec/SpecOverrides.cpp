#include "core/spec/SpecOverrides.h"

#include "core/spec/ModelDimensionEdits.h"
#include "core/spec/SpecFields.h"
#include "core/spec/SpecIO.h"
#include "core/spec/TomlLimits.h"

#include <toml++/toml.h>

#include <algorithm>
#include <optional>
#include <sstream>

namespace parallax {

namespace {

std::string trimmed(const std::string& s) {
    const size_t a = s.find_first_not_of(" \t");
    if (a == std::string::npos) return {};
    const size_t b = s.find_last_not_of(" \t");
    return s.substr(a, b - a + 1);
}

} // namespace

RunSpec applySpecOverrides(const RunSpec& base, const std::vector<std::string>& sets) {
    if (sets.empty()) return base;
    toml::table doc;
    const std::string baseText = toToml(base);
    checkTomlLimits(baseText, "the spec to change");
    try {
        doc = toml::parse(baseText);
    } catch (const toml::parse_error& e) {
        throw SpecError(std::string("the spec to change cannot be read back: ") + std::string(e.description()));
    }
    const std::vector<std::string>& known = specFieldPaths();
    for (const std::string& entry : sets) {
        const size_t eq = entry.find('=');
        const std::string path = trimmed(entry.substr(0, eq));
        if (eq == std::string::npos || path.empty())
            throw SpecError("--set " + entry + ": write FIELD=VALUE, e.g. --set parallel.dp=4");
        if (std::find(known.begin(), known.end(), path) == known.end())
            throw SpecError("--set " + entry + ": " + path + " is no field of a spec (see docs/spec.md)");
        const std::string valueText = trimmed(entry.substr(eq + 1));
        toml::table value;
        checkTomlLimits("v = " + valueText, "--set " + entry);
        try {
            value = toml::parse("v = " + valueText);
        } catch (const toml::parse_error&) {
            value = toml::table{{"v", valueText}}; // not TOML: a string, as a shell user writes it
        }
        toml::node* node = value.get("v");
        const size_t dot = path.find('.');
        if (dot == std::string::npos) {
            doc.insert_or_assign(path, *node);
            continue;
        }
        const std::string section = path.substr(0, dot);
        if (!doc.contains(section)) doc.insert(section, toml::table{});
        toml::table* t = doc.get(section)->as_table();
        t->insert_or_assign(path.substr(dot + 1), *node);
    }
    std::ostringstream text;
    text << doc;
    std::string source = "--set";
    for (const std::string& entry : sets) source += " " + entry;
    return parseSpec(text.str(), source);
}

namespace {

// A dimension's value as the model has it: the spec's, or the preset's when unset ("" when the model
// does not resolve).
std::string resolvedText(const RunSpec& spec, const std::string& path) {
    const std::optional<int64_t> v = resolvedDimension(spec, path);
    return v ? std::to_string(*v) : std::string();
}

bool sameDimensions(const RunSpec& a, const RunSpec& b) {
    for (const std::string& path : modelDimensionPaths())
        if (resolvedDimension(a, path) != resolvedDimension(b, path)) return false;
    return true;
}

// Why the model field at `path`, written differently in `next` than in `parent`, keeps the
// checkpoint from loading; nullopt when the model is the same (a dimension written out at the
// preset's value, or another preset of the same dimensions).
std::optional<std::string> modelChange(const RunSpec& parent, const RunSpec& next, const std::string& path,
                                       const std::string& run) {
    std::string was, now;
    if (resolvedDimension(parent, path) || resolvedDimension(next, path)) {
        was = resolvedText(parent, path);
        now = resolvedText(next, path);
        if (was == now) return std::nullopt;
    } else {
        if (path == "model.preset" && sameDimensions(parent, next)) return std::nullopt;
        RunSpec a = parent, b = next;
        for (const SpecField& f : specFields(a))
            if (f.path() == path) was = fieldValueText(f.ref);
        for (const SpecField& f : specFields(b))
            if (f.path() == path) now = fieldValueText(f.ref);
    }
    return path + " = " + now + ", but the checkpoint of " + run + " holds a model with " + path + " = " + was +
           "; a checkpoint loads only into the same model: keep " + path + " = " + was;
}

} // namespace

std::vector<SpecIssue> resumeIssues(const RunSpec& parent, const RunSpec& next, int64_t parentId) {
    std::vector<SpecIssue> out;
    RunSpec a = parent, b = next;
    const std::vector<SpecField> before = specFields(a), after = specFields(b);
    const std::string run = "run " + std::to_string(parentId);
    // Fields that change the numbers of the continued run, beyond the model.
    static const std::vector<std::string> numeric = {
        "data.kind", "data.path", "data.shuffle", "train.global_batch", "train.lr", "train.min_lr",
        "train.warmup", "train.weight_decay", "train.beta1", "train.beta2", "train.eps", "train.grad_clip",
        "train.seed", "train.precision", "train.steps", "parallel.reduce_dtype"};
    for (size_t i = 0; i < before.size() && i < after.size(); ++i) {
        const std::string path = before[i].path();
        const std::string was = fieldValueText(before[i].ref), now = fieldValueText(after[i].ref);
        if (was == now) continue;
        if (std::string(before[i].section) == "model") {
            if (const std::optional<std::string> problem = modelChange(parent, next, path, run))
                out.push_back({path, *problem, false});
        } else if (std::find(numeric.begin(), numeric.end(), path) != numeric.end()) {
            out.push_back({path, path + " = " + now + " where " + run + " had " + was +
                                     ": the continued run trains other numbers than " + run + " would have" +
                                     (path == "train.steps" ? " (the learning-rate schedule spans train.steps)" : ""),
                           true});
        }
    }
    return out;
}

} // namespace parallax
