#include "core/launch/CheckedSpec.h"

#include "core/launch/SpecRejected.h"
#include "core/spec/MachineInfo.h"
#include "core/spec/SpecIO.h"
#include "core/spec/TomlLimits.h"
#include "core/util/Files.h"

#include <fstream>

namespace parallax {

namespace {

// Whether a text TOML reads (parseSpec took it) sets nothing: every line blank or a comment.
bool setsNothing(const std::string& text) {
    size_t at = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0; // a byte-order mark
    while (at < text.size()) {
        const size_t end = std::min(text.find('\n', at), text.size());
        const size_t first = text.find_first_not_of(" \t\r", at);
        if (first < end && text[first] != '#')
            return false;
        at = end + 1;
    }
    return true;
}

CheckedSpec validated(RunSpec spec, std::string text) {
    std::vector<SpecIssue> issues = validateSpec(spec, thisMachine()); // unknown keys as warnings too
    if (hasErrors(issues))
        throw SpecRejected(std::move(issues));
    return {std::move(spec), std::move(text), std::move(issues)};
}

} // namespace

CheckedSpec checkSpecFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string text;
    const bool readable = in && !isDirectory(path);
    if (readable)
        text = readTomlText(in);
    if (!readable || in.bad() || setsNothing(text)) {
        // Not a spec: the spec reader reads it again, only to say why in its own words.
        readSpecFile(path);
        throw SpecError(path + ": cannot read the spec file");
    }
    RunSpec spec = parseSpec(text, path);
    return validated(std::move(spec), std::move(text));
}

CheckedSpec checkSpec(const RunSpec& spec) { return validated(spec, toToml(spec)); }

} // namespace parallax
