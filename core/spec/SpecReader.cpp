// Reading a run spec: parseSpec, readSpecFile, unknownKeys (SpecIO.h).
#include "core/spec/ModelKinds.h"
#include "core/spec/SpecFields.h"
#include "core/spec/SpecIO.h"
#include "core/spec/Suggestions.h"
#include "core/spec/TomlLimits.h"
#include "core/spec/TomlText.h"
#include "core/util/Files.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <set>

namespace parallax {

namespace {

template <class... F>
struct Overloaded : F... {
    using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

// A non-negative integer: a TOML integer, or the decimal string that values above 2^63 - 1 (which do
// not fit a TOML integer) are written as; nullopt for anything else.
std::optional<uint64_t> unsignedValue(const toml::node& node) {
    if (const auto* i = node.as_integer()) {
        if (i->get() < 0) return std::nullopt;
        return static_cast<uint64_t>(i->get());
    }
    const auto* s = node.as_string();
    if (!s) return std::nullopt;
    const std::string& text = s->get();
    errno = 0;
    char* end = nullptr;
    const unsigned long long parsed = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || *end != '\0' || errno == ERANGE)
        return std::nullopt;
    return parsed;
}

std::vector<std::string> keysOfSection(const std::string& section) {
    RunSpec spec;
    std::vector<std::string> keys;
    for (const SpecField& f : specFields(spec))
        if (section == f.section) keys.emplace_back(f.key);
    return keys;
}

bool isSection(const std::string& name) {
    for (const std::string& s : specSections())
        if (s == name) return true;
    return false;
}

// The hint for an unknown key: a near miss in the same section first ("stpes" -> train.steps), then
// the same key in another section ("dp" under [train] -> parallel.dp), then a near miss anywhere.
std::string suggestionFor(const std::string& section, const std::string& key) {
    if (section.empty()) {
        const std::string s = closestMatch(key, specSections());
        if (!s.empty()) return "[" + s + "]";
    }
    const std::string same = closestMatch(key, keysOfSection(section));
    if (!same.empty()) return section.empty() ? same : section + "." + same;
    std::vector<std::string> keys;
    std::vector<std::string> paths;
    for (const std::string& path : specFieldPaths()) {
        const size_t dot = path.find('.');
        if (dot == std::string::npos) continue;
        if (path.substr(dot + 1) == key) return path;
        keys.push_back(path.substr(dot + 1));
        paths.push_back(path);
    }
    const std::string near = closestMatch(key, keys);
    for (size_t i = 0; i < keys.size(); ++i)
        if (!near.empty() && keys[i] == near) return paths[i];
    return "";
}

SpecIssue unknownKeyIssue(const std::string& section, const std::string& key, const std::string& location,
                          bool isTable) {
    SpecIssue issue;
    issue.warning = true;
    issue.field = section.empty() ? key : section + "." + key;
    const std::string what = section.empty() && isTable ? "[" + key + "]: unknown section"
                                                        : issue.field + ": unknown key";
    const std::string hint = suggestionFor(section, key);
    issue.message = (location.empty() ? "" : location + ": ") + what +
                    (hint.empty() ? "." : "; did you mean " + hint + "?") +
                    " It is kept and written back unchanged, but Parallax does not use it.";
    return issue;
}

// Unknown keys warned of one by one; a file of a hundred thousand of them is no spec a person
// wrote, and a hint for each would take seconds.
constexpr size_t kMostUnknownKeys = 50;

SpecIssue moreUnknownKeys(size_t total) {
    SpecIssue issue;
    issue.warning = true;
    issue.field = "spec";
    issue.message = std::to_string(total - kMostUnknownKeys) + " more unknown keys (" + std::to_string(total) +
                    " in all; the first " + std::to_string(kMostUnknownKeys) +
                    " are listed). They are kept and written back unchanged, but Parallax does not use them.";
    return issue;
}

class Reader {
public:
    Reader(std::string source, std::vector<SpecIssue>* unknown) : m_source(std::move(source)), m_unknown(unknown) {}

    RunSpec read(const toml::table& doc) {
        RunSpec spec;
        std::vector<SpecField> fields = specFields(spec);
        for (auto&& [k, node] : doc) {
            const std::string key(k.str());
            if (key == "name") {
                readField(node, fields.front());
            } else if (isSection(key)) {
                const toml::table* section = node.as_table();
                if (!section)
                    fail(node, key + " must be a table ([" + key + "]), got " + describeNode(node));
                readSection(*section, key, fields);
            } else {
                keep("", key, node);
            }
        }
        // A kind with LoRA targets of its own gets them where the file names none.
        if (!doc.at_path("finetune.lora_targets")) spec.finetune.lora_targets = defaultLoraTargets(spec.model.kind);
        // Tables iterate in key order; report in the order a person reads the file.
        std::stable_sort(m_found.begin(), m_found.end(), [](const auto& a, const auto& b) { return a.line < b.line; });
        for (size_t i = 0; i < m_found.size() && i < kMostUnknownKeys; ++i) {
            const FoundKey& f = m_found[i];
            m_unknown->push_back(unknownKeyIssue(f.section, f.key, f.location, f.table));
        }
        if (m_found.size() > kMostUnknownKeys) m_unknown->push_back(moreUnknownKeys(m_found.size()));
        if (!m_preserved.empty()) {
            appendTable(spec.preserved_toml, m_preserved, "");
            const size_t start = spec.preserved_toml.find_first_not_of('\n');
            spec.preserved_toml = start == std::string::npos ? "" : spec.preserved_toml.substr(start);
        }
        return spec;
    }

private:
    std::string m_source;
    std::vector<SpecIssue>* m_unknown;
    toml::table m_preserved;
    struct FoundKey {
        toml::source_index line;
        std::string section, key, location;
        bool table;
    };
    std::vector<FoundKey> m_found; // unknown keys with their line

    std::string location(const toml::node& node) const {
        const auto line = node.source().begin.line;
        return line > 0 ? m_source + ":" + std::to_string(line) : m_source;
    }

    [[noreturn]] void fail(const toml::node& node, const std::string& message) const {
        throw SpecError(location(node) + ": " + message);
    }

    void keep(const std::string& section, const std::string& key, const toml::node& node) {
        if (m_unknown) m_found.push_back({node.source().begin.line, section, key, location(node), node.is_table()});
        if (section.empty()) {
            m_preserved.insert_or_assign(key, node);
            return;
        }
        if (!m_preserved.contains(section)) m_preserved.insert(section, toml::table{});
        m_preserved[section].as_table()->insert_or_assign(key, node);
    }

    void readSection(const toml::table& table, const std::string& section, std::vector<SpecField>& fields) {
        for (auto&& [k, node] : table) {
            const std::string key(k.str());
            bool known = false;
            for (SpecField& f : fields) {
                if (section == f.section && key == f.key) {
                    readField(node, f);
                    known = true;
                    break;
                }
            }
            if (!known) keep(section, key, node);
        }
    }

    void readField(const toml::node& node, SpecField& field) {
        const std::string path = field.path();
        auto wrong = [&](const std::string& expected) { fail(node, path + " must be " + expected + ", got " + describeNode(node)); };
        auto integer = [&](const toml::node& n, const std::string& p) -> int64_t {
            if (const auto* v = n.as_integer()) return v->get();
            if (n.is_floating_point())
                fail(n, p + " must be an integer, got " + describeNode(n) + "; write it without a fraction or exponent");
            fail(n, p + " must be an integer, got " + describeNode(n));
        };
        std::visit(
            Overloaded{
                [&](std::string* v) {
                    if (!node.is_string()) wrong("a string");
                    *v = node.as_string()->get();
                },
                [&](ChoiceField* v) {
                    if (!node.is_string()) wrong("a string");
                    v->setName(node.as_string()->get());
                },
                [&](bool* v) {
                    if (!node.is_boolean()) wrong("a boolean (true or false)");
                    *v = node.as_boolean()->get();
                },
                [&](int64_t* v) { *v = integer(node, path); },
                [&](uint64_t* v) {
                    const std::optional<uint64_t> value = unsignedValue(node);
                    if (!value) wrong("a non-negative integer");
                    *v = *value;
                },
                [&](double* v) {
                    if (const auto* f = node.as_floating_point()) *v = f->get();
                    else if (const auto* i = node.as_integer()) *v = static_cast<double>(i->get());
                    else wrong("a number");
                },
                [&](std::optional<int64_t>* v) { *v = integer(node, path); },
                [&](std::vector<int64_t>* v) {
                    const toml::array* a = node.as_array();
                    if (!a) wrong("an array of integers");
                    v->clear();
                    for (size_t i = 0; i < a->size(); ++i)
                        v->push_back(integer((*a)[i], path + "[" + std::to_string(i) + "]"));
                },
                [&](std::vector<std::string>* v) {
                    const toml::array* a = node.as_array();
                    if (!a) wrong("an array of strings");
                    v->clear();
                    for (size_t i = 0; i < a->size(); ++i) {
                        const toml::node& e = (*a)[i];
                        if (!e.is_string())
                            fail(e, path + "[" + std::to_string(i) + "] must be a string, got " + describeNode(e));
                        v->push_back(e.as_string()->get());
                    }
                },
                [&](std::map<std::string, std::string>* v) {
                    const toml::table* t = node.as_table();
                    if (!t) wrong("a table of strings ([" + path + "])");
                    v->clear();
                    for (auto&& [k, e] : *t) {
                        const std::string entry = path + "." + std::string(k.str());
                        if (!e.is_string())
                            fail(e, entry + " must be a string, got " + describeNode(e) +
                                        "; environment values are text, write it in quotes");
                        (*v)[std::string(k.str())] = e.as_string()->get();
                    }
                },
            },
            field.ref);
    }
};

toml::table parseToml(const std::string& text, const std::string& sourceName) {
    checkTomlLimits(text, sourceName);
    try {
        return toml::parse(std::string_view(text), std::string_view(sourceName));
    } catch (const toml::parse_error& e) {
        std::string description(e.description());
        const std::string prefix = "Error while ";
        description = description.rfind(prefix, 0) == 0 ? "TOML syntax error while " + description.substr(prefix.size())
                                                        : "TOML syntax error: " + description;
        const auto& begin = e.source().begin;
        throw SpecError(sourceName + ":" + std::to_string(begin.line) + ":" + std::to_string(begin.column) + ": " +
                        description);
    }
}

std::string readWholeFile(const std::string& path) {
    // A folder opens like a file and reads as nothing, which would be a run of all defaults.
    if (isDirectory(path))
        throw SpecError(path + ": is a directory, not a spec file; give the run's .toml file (e.g. " +
                        joinPath(path, "quickstart.toml") + ")");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw SpecError(path + ": cannot read the spec file (" + std::strerror(errno) + ")");
    std::string text = readTomlText(in);
    if (in.bad()) throw SpecError(path + ": cannot read the spec file (" + std::strerror(errno) + ")");
    return text;
}

// A file that sets nothing (empty, blank, only comments) is a truncated or wrong file far more
// often than a wish for every default.
RunSpec readSpecText(const std::string& text, const std::string& path, std::vector<SpecIssue>* unknown) {
    const toml::table doc = parseToml(text, path);
    if (doc.empty())
        throw SpecError(path + ": the spec file sets nothing (it is empty or holds only comments); write at "
                               "least the run's name, e.g. name = \"quickstart\", or start from "
                               "resources/runs/quickstart.toml");
    return Reader(path, unknown).read(doc);
}

} // namespace

RunSpec parseSpec(const std::string& text, const std::string& sourceName) {
    const toml::table doc = parseToml(text, sourceName);
    return Reader(sourceName, nullptr).read(doc);
}

RunSpec parseSpec(const std::string& text, const std::string& sourceName, std::vector<SpecIssue>& unknown) {
    const toml::table doc = parseToml(text, sourceName);
    return Reader(sourceName, &unknown).read(doc);
}

RunSpec readSpecFile(const std::string& path) {
    return readSpecText(readWholeFile(path), path, nullptr);
}

RunSpec readSpecFile(const std::string& path, std::vector<SpecIssue>& unknown) {
    return readSpecText(readWholeFile(path), path, &unknown);
}

std::vector<SpecIssue> unknownKeys(const std::string& text, const std::string& sourceName) {
    std::vector<SpecIssue> unknown;
    parseSpec(text, sourceName, unknown);
    return unknown;
}

std::vector<SpecIssue> unknownKeys(const RunSpec& spec) {
    std::vector<SpecIssue> issues;
    if (spec.preserved_toml.empty()) return issues;
    const toml::table kept = parseToml(spec.preserved_toml, "preserved_toml");
    size_t total = 0;
    const auto add = [&](const std::string& section, const std::string& key, bool isTable) {
        if (++total <= kMostUnknownKeys) issues.push_back(unknownKeyIssue(section, key, "", isTable));
    };
    for (auto&& [k, node] : kept) {
        const std::string key(k.str());
        if (isSection(key) && node.is_table()) {
            for (auto&& [sub, subNode] : *node.as_table()) add(key, std::string(sub.str()), subNode.is_table());
        } else {
            add("", key, node.is_table());
        }
    }
    if (total > kMostUnknownKeys) issues.push_back(moreUnknownKeys(total));
    return issues;
}

} // namespace parallax
