#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace parallax {

// The spans a pipeline schedule reports for its passes, as the wire and the store name them ("F",
// "B", "W", "recv", "send"): the one table of them. Other spans (an optimizer step, a collective)
// keep names of their own and have no kind here.
enum class SpanKind { Forward, Backward, Weight, Recv, Send };
inline constexpr size_t kSpanKindCount = 5;

struct SpanKindInfo {
    SpanKind kind;
    const char* name;  // on the wire and in the store
    bool compute;      // a pass of the model's work (F, B, W): the schedule's notation "F3" names it
    bool pipelineComm; // waiting on the pipeline's neighbours (recv, send)
};

const SpanKindInfo& spanKindInfo(SpanKind kind);
const char* spanKindName(SpanKind kind);
// The kind a span's name stands for; nullopt for a span of no pipeline kind.
std::optional<SpanKind> spanKindNamed(const std::string& name);

} // namespace parallax
