#pragma once

#include "core/store/RunStore.h"

#include <cstdint>
#include <ostream>

namespace parallax {

// What a trace holds, by kind of event.
struct TraceCounts {
    int64_t spans = 0;       // pipeline spans (forward, backward, send, recv...), every recorded step
    int64_t steps = 0;       // step rows
    int64_t rankSteps = 0;   // each rank's compute and wait of a step (with a flight recorder)
    int64_t checkpoints = 0;
    int64_t comms = 0;       // flight-recorder heartbeats: counters, and the operation a rank waits in
    int64_t logs = 0;        // log lines, as instant events
    int64_t events = 0;      // every event written, metadata included
};

// Writes run `run` as a trace in the Chrome trace-event format (JSON object form), which Perfetto
// (ui.perfetto.dev) and chrome://tracing open: one process per host, one thread (track) per rank on
// its host, a "run" process with the steps, checkpoints and the supervisor's lines. Pipeline spans are
// complete events ("X") on their rank's track named by kind, with stage, step and micro-batch in
// args; steps and checkpoints complete events ending when rank 0 reported them; log lines instant
// events ("i") on their rank's track; flight-recorder heartbeats counters ("C") of each rank's
// operations and, while one is pending, an instant event naming it. Timestamps are microseconds
// in rank 0's clock (the worker aligns every rank's spans to it) from the run's first event;
// events are written in timestamp order after the metadata. Throws std::runtime_error for a run the
// store does not have.
TraceCounts writeTrace(const RunStore& store, int64_t run, std::ostream& out);

} // namespace parallax
