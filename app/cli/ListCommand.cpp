#include "app/cli/Commands.h"
#include "app/cli/Format.h"
#include "app/cli/TextTable.h"

#include <chrono>
#include <iostream>

namespace parallax {

namespace {

double wallNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

} // namespace

int listCommand(const std::string& storePath, const ListCommandOptions& o) {
    RunStore store(storePath);
    markLostRunsIfWritable(store);
    RunFilter filter;
    for (const std::string& name : o.states) // checked against the states' names as the option was read
        if (const std::optional<RunState> state = runStateNamed(name)) filter.states.push_back(*state);
    filter.text = o.text;
    filter.limit = o.limit;
    const std::vector<RunRecord> runs = store.listRuns(filter);
    if (runs.empty()) {
        std::cerr << "no runs in " << store.path() << (o.states.empty() && o.text.empty() ? "" : " that match")
                  << "; start one with parallax-cli run SPEC" << std::endl;
        return 0;
    }
    using A = TextTable::Align;
    TextTable t;
    t.addColumn("ID", A::Right);
    t.addColumn("NAME");
    t.addColumn("STATE");
    t.addColumn("MODEL");
    t.addColumn("LAYOUT");
    t.addColumn("STEP", A::Right);
    t.addColumn("LOSS", A::Right);
    t.addColumn("TOK/S", A::Right);
    t.addColumn("STARTED");
    t.addColumn("DURATION", A::Right);
    const double now = wallNow();
    for (const RunRecord& r : runs) {
        const std::string step = (r.last_step >= 0 ? std::to_string(stepsDoneAfter(r.last_step)) : std::string("-")) + "/" +
                                 std::to_string(r.steps_total);
        double duration = -1;
        if (r.started_at > 0)
            duration = (r.ended_at > 0 ? r.ended_at : now) - r.started_at;
        t.addRow({std::to_string(r.id), r.name, runStateName(r.state), r.model_kind, r.layout, step,
                  r.last_loss ? formatLoss(*r.last_loss) : "-", r.tokens_per_s ? formatRate(*r.tokens_per_s) : "-",
                  formatDateTime(r.started_at > 0 ? r.started_at : r.created_at), formatDuration(duration)});
    }
    t.print(std::cout);
    return 0;
}

} // namespace parallax
