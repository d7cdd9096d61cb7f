"""Reading a Parallax worker's log: the telemetry events it prints as `@plx {json}` lines."""
import json


def parallax_events(path):
    """Every telemetry event of the log at `path`, in order (lines that do not parse are skipped)."""
    events = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            at = line.find("@plx ")
            if at >= 0:
                try:
                    events.append(json.loads(line[at + 5:]))
                except json.JSONDecodeError:
                    pass
    return events
