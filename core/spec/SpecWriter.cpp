// Writing a run spec: toToml, writeSpecFile (SpecIO.h).
#include "core/spec/SpecFields.h"
#include "core/spec/SpecIO.h"
#include "core/spec/TomlLimits.h"
#include "core/spec/TomlText.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <unistd.h>

namespace parallax {

namespace {

bool isEmptyValue(const SpecFieldRef& ref) {
    if (auto* s = std::get_if<std::string*>(&ref)) return (*s)->empty();
    if (auto* o = std::get_if<std::optional<int64_t>*>(&ref)) return !(*o)->has_value();
    if (auto* v = std::get_if<std::vector<int64_t>*>(&ref)) return (*v)->empty();
    if (auto* v = std::get_if<std::vector<std::string>*>(&ref)) return (*v)->empty();
    if (auto* m = std::get_if<std::map<std::string, std::string>*>(&ref)) return (*m)->empty();
    return false;
}

// The unknown entries kept for `section` ("" = top level), without anything that would collide
// with a known field or section: the known value always wins.
toml::table keptEntries(const toml::table& kept, const std::string& section) {
    std::set<std::string> known;
    RunSpec spec;
    for (const SpecField& f : specFields(spec))
        if (section == f.section) known.insert(f.key);
    if (section.empty())
        for (const std::string& s : specSections()) known.insert(s);

    const toml::table* source = &kept;
    if (!section.empty()) {
        source = kept[section].as_table();
        if (!source) return {};
    }
    toml::table out;
    for (auto&& [k, node] : *source)
        if (!known.count(std::string(k.str()))) out.insert_or_assign(k, node);
    return out;
}

toml::table parseKept(const std::string& text) {
    if (text.empty()) return {};
    checkTomlLimits(text, "preserved_toml");
    try {
        return toml::parse(std::string_view(text), std::string_view("preserved_toml"));
    } catch (const toml::parse_error& e) {
        throw SpecError("preserved_toml:" + std::to_string(e.source().begin.line) +
                        ": the kept unknown keys are not valid TOML (" + std::string(e.description()) + ")");
    }
}

// Whether a section is written: a section none of whose fields matters for this spec, each at its
// default and without kept keys ([finetune] of a gpt run) is left out.
bool sectionWritten(const std::string& section, const std::vector<SpecField>& fields,
                    const std::vector<SpecField>& defaults, const RunSpec& spec, const toml::table& kept) {
    if (!keptEntries(kept, section).empty()) return true;
    for (size_t i = 0; i < fields.size(); ++i) {
        if (section != fields[i].section) continue;
        if (fieldRelevant(fields[i].info, spec) || fieldValueText(fields[i].ref) != fieldValueText(defaults[i].ref))
            return true;
    }
    return false;
}

} // namespace

std::string toToml(const RunSpec& specIn) {
    RunSpec spec = specIn; // specFields points into a mutable spec; nothing is changed
    RunSpec defaults;
    const std::vector<SpecField> fields = specFields(spec);
    const std::vector<SpecField> defaultFields = specFields(defaults);
    const toml::table kept = parseKept(spec.preserved_toml);

    auto writeField = [&](std::string& out, size_t i) {
        const SpecField& f = fields[i];
        // Unset optionals and empty lists/strings whose default is also empty are left out, so
        // that a local run's file does not list every Slurm option.
        if (isEmptyValue(f.ref) && isEmptyValue(defaultFields[i].ref)) return;
        out += std::string(f.key) + " = " + fieldValueText(f.ref) + "\n";
    };

    std::string out;
    for (size_t i = 0; i < fields.size(); ++i)
        if (fields[i].section[0] == '\0') writeField(out, i);
    const toml::table top = keptEntries(kept, "");
    appendKeyValues(out, top);

    for (const std::string& section : specSections()) {
        if (!sectionWritten(section, fields, defaultFields, spec, kept)) continue;
        out += "\n[" + section + "]\n";
        const std::map<std::string, std::string>* table = nullptr;
        std::string tableKey;
        for (size_t i = 0; i < fields.size(); ++i) {
            if (section != fields[i].section) continue;
            if (auto* m = std::get_if<std::map<std::string, std::string>*>(&fields[i].ref)) {
                table = *m; // written as its own [section.key] table after the plain keys
                tableKey = fields[i].key;
                continue;
            }
            writeField(out, i);
        }
        const toml::table extra = keptEntries(kept, section);
        appendKeyValues(out, extra);
        if (table && !table->empty()) {
            out += "\n[" + section + "." + tableKey + "]\n";
            for (const auto& [k, v] : *table) out += tomlKey(k) + " = " + tomlString(v) + "\n";
        }
        appendSubTables(out, extra, section);
    }
    appendSubTables(out, top, "");
    return out;
}

void writeSpecFile(const RunSpec& spec, const std::string& path) {
    const std::string text = toToml(spec);
    // Written beside the target and renamed over it, so that a reader (the supervisor, the
    // console) sees the old file or the new one, never half of one.
    const std::string temp = path + ".tmp." + std::to_string(::getpid());
    auto failure = [&](const std::string& what) {
        const std::string reason = std::strerror(errno);
        std::remove(temp.c_str());
        return SpecError(path + ": cannot " + what + " the spec file (" + reason + ")");
    };
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw SpecError(path + ": cannot write the spec file (" + std::strerror(errno) + ")");
    size_t written = 0;
    while (written < text.size()) {
        const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
        if (n < 0) {
            if (errno == EINTR) continue;
            ::close(fd);
            throw failure("write");
        }
        written += static_cast<size_t>(n);
    }
    if (::fsync(fd) != 0) {
        ::close(fd);
        throw failure("write");
    }
    if (::close(fd) != 0) throw failure("write");
    if (std::rename(temp.c_str(), path.c_str()) != 0) throw failure("replace");
}

} // namespace parallax
