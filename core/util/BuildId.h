#pragma once

#include <string>

namespace parallax {

// The GNU build id of the running executable (the linker's hash of its contents, as `file` or
// `readelf -n` show it), in hex; empty when it has none. Two executables with the same build id
// are the same build: preflight compares the worker on every host with the local one by it.
std::string executableBuildId();

// "<program> <version> (build <id>)", what --version prints.
std::string versionLine(const std::string& program);

} // namespace parallax
