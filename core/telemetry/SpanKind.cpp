#include "core/telemetry/SpanKind.h"

#include <iterator>
#include <type_traits>

namespace parallax {

namespace {

constexpr SpanKindInfo kKinds[] = {
    {SpanKind::Forward, "F", true, false},
    {SpanKind::Backward, "B", true, false},
    {SpanKind::Weight, "W", true, false},
    {SpanKind::Recv, "recv", false, true},
    {SpanKind::Send, "send", false, true},
};
static_assert(std::extent_v<decltype(kKinds)> == kSpanKindCount, "a row per SpanKind");

} // namespace

const SpanKindInfo& spanKindInfo(SpanKind kind) { return kKinds[static_cast<size_t>(kind)]; }

const char* spanKindName(SpanKind kind) { return spanKindInfo(kind).name; }

std::optional<SpanKind> spanKindNamed(const std::string& name) {
    for (const SpanKindInfo& k : kKinds)
        if (name == k.name) return k.kind;
    return std::nullopt;
}

} // namespace parallax
