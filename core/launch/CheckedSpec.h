#pragma once

#include "core/spec/RunSpec.h"
#include "core/spec/SpecValidator.h"

#include <string>
#include <vector>

namespace parallax {

// A run's spec as a run takes it: read once, validated once against this machine, and handed on
// by value; its text is kept as written (the store and the run folder's spec.toml, which the
// ranks read, hold it byte for byte, comments and all).
struct CheckedSpec {
    RunSpec spec;
    std::string text;
    std::vector<SpecIssue> warnings; // the validator's (unknown keys among them)
};

// The spec file at `path`. SpecError naming it when it is a folder, missing, unreadable, too
// large or too deep, not TOML, or sets nothing (a run is never started from the defaults by
// mistake); SpecRejected with every issue when the validator finds errors.
CheckedSpec checkSpecFile(const std::string& path);
// A spec made here (a balance filled in its split, a resume with other settings): validated as
// above, its text written from it.
CheckedSpec checkSpec(const RunSpec& spec);

} // namespace parallax
