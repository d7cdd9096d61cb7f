#pragma once

// Bounds on the TOML text Parallax reads (run specs, cluster profiles, --set values, the kept
// unknown keys), checked before the TOML library sees the text. The library nests by recursion and
// builds every level of a dotted header or key: a 60 KB file of 30,000 levels ([d.d.d...])
// overflows its stack, one of 20,000 takes seconds and more than a gigabyte. A real spec nests three
// levels deep ([launch.env] NAME = "...") and is a few KB.

#include <cstddef>
#include <istream>
#include <string>
#include <string_view>

namespace parallax {

// The most bytes of TOML read: a spec or profile listing 100,000 hosts takes about 2 MiB.
constexpr size_t kMaxTomlBytes = size_t(4) << 20;
// The deepest nesting read, every kind counted together: the parts of a table header and of a key
// ([a.b.c], a.b.c = 1) and inline tables and arrays within each other.
constexpr int kMaxTomlDepth = 64;

// SpecError when `text` is larger than kMaxTomlBytes ("SOURCE: ... at most 4 MiB ...") or nests
// deeper than kMaxTomlDepth ("SOURCE:LINE: ... deeper than 64 levels ..."). Strings (basic,
// literal, multi-line) and comments are skipped as TOML reads them: a '[' or a '.' in them is no
// header and no key part. Takes time linear in the text and memory bounded by the depth limit.
void checkTomlLimits(std::string_view text, const std::string& source);

// At most kMaxTomlBytes + 1 bytes of `in`: enough for checkTomlLimits to refuse a larger text
// without reading an endless one (/dev/zero, a pipe) to its end.
std::string readTomlText(std::istream& in);

} // namespace parallax
