#pragma once

#include "core/telemetry/Events.h"

#include <string>
#include <string_view>

namespace parallax {

// A telemetry line is kTelemetryPrefix followed by one JSON object on one line:
//   @plx {"ev":"step","v":1,"step":12,"loss":2.31,...}
// "ev" names the event (its kName in Events.h: run_start, step, device, span, comm, rank_step,
// checkpoint, log, run_end), "v" is the protocol version (kTelemetryVersion), and every other key is
// one of the event's fields(). Non-finite doubles are written as null (NaN) or the strings "Infinity"/"-Infinity";
// the reader also accepts Python's bare NaN/Infinity tokens.
inline constexpr std::string_view kTelemetryPrefix = "@plx ";

// The line, without a newline.
std::string encodeEvent(const TelemetryEvent& event);
// Appends the line to `out` (no newline), for emitters that reuse one buffer.
void appendEvent(std::string& out, const TelemetryEvent& event);

// "run_start", "step", ...
std::string_view eventName(const TelemetryEvent& event);

struct DecodedLine {
    enum class Kind {
        Event,     // a telemetry event
        Text,      // no prefix: an ordinary log line
        Malformed, // the prefix is there but the rest is not a valid event; see error
    };
    Kind kind = Kind::Text;
    TelemetryEvent event;   // Kind::Event
    int64_t version = 0;    // the line's "v" (Kind::Event)
    std::string error;      // Kind::Malformed: why, e.g. "field \"step\" must be an integer (got a string)"
};

// Classifies one line. Unknown keys are ignored and a newer "v" decodes the known fields. Malformed:
// bad or truncated JSON, a value of the wrong type, an unknown "ev", a missing or non-positive "v",
// a missing required field (kRequired in the event's fields(), Events.h), or a run_end whose status
// is not one of succeeded, failed, stopped. Every other field keeps its default from Events.h when
// absent.
DecodedLine decodeLine(std::string_view line);
// The same into an existing object, to reuse its allocations on a hot path.
void decodeLine(std::string_view line, DecodedLine& out);

} // namespace parallax
