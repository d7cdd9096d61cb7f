#include "core/spec/SpecCompare.h"

#include "core/spec/SpecFields.h"
#include "core/spec/SpecIO.h"
#include "core/spec/TomlLimits.h"
#include "core/spec/TomlText.h"

#include <map>

namespace parallax {

namespace {

using Flat = std::vector<std::pair<std::string, std::string>>;

void flattenKept(const toml::table& table, const std::string& prefix, Flat& out) {
    for (auto&& [k, node] : table) {
        const std::string path = (prefix.empty() ? "" : prefix + ".") + std::string(k.str());
        const toml::table* sub = node.as_table();
        if (sub && !sub->empty()) flattenKept(*sub, path, out);
        else out.emplace_back(path, tomlInline(node));
    }
}

Flat flatten(const RunSpec& specIn) {
    RunSpec spec = specIn;
    Flat out;
    for (const SpecField& f : specFields(spec)) out.emplace_back(f.path(), fieldValueText(f.ref));
    if (!spec.preserved_toml.empty()) {
        toml::table kept;
        try {
            checkTomlLimits(spec.preserved_toml, "preserved_toml");
            kept = toml::parse(std::string_view(spec.preserved_toml), std::string_view("preserved_toml"));
        } catch (const SpecError&) {
            out.emplace_back("preserved_toml", spec.preserved_toml);
            return out;
        } catch (const toml::parse_error&) {
            // Unreadable kept text can only be compared as text.
            out.emplace_back("preserved_toml", spec.preserved_toml);
            return out;
        }
        Flat keptFlat;
        flattenKept(kept, "", keptFlat);
        for (auto& entry : keptFlat) out.push_back(std::move(entry));
    }
    return out;
}

} // namespace

std::vector<SpecDifference> specDifferences(const RunSpec& left, const RunSpec& right) {
    const Flat a = flatten(left);
    const Flat b = flatten(right);
    std::map<std::string, std::string> rightValues(b.begin(), b.end());
    std::map<std::string, std::string> leftValues(a.begin(), a.end());
    std::vector<SpecDifference> out;
    for (const auto& [path, value] : a) {
        auto it = rightValues.find(path);
        const std::string other = it == rightValues.end() ? "" : it->second;
        if (it == rightValues.end() || other != value) out.push_back({path, value, other});
    }
    for (const auto& [path, value] : b)
        if (!leftValues.count(path)) out.push_back({path, "", value});
    return out;
}

bool operator==(const RunSpec& left, const RunSpec& right) {
    return specDifferences(left, right).empty();
}

bool operator!=(const RunSpec& left, const RunSpec& right) {
    return !(left == right);
}

} // namespace parallax
