#pragma once

#include "core/store/RunState.h"

#include <QColor>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace parallax {

// Colours of runs plotted together that stay with the run, not with its place in a list: a run
// keeps its colour while others are checked or unchecked, and gets it back when it is checked
// again, unless a run shown all along has taken it since. A new run takes the first colour no run
// on the plot has.
class RunColors {
public:
    // The colours of the runs shown now, in the order of `ids`; remembers them for later calls.
    std::vector<QColor> assign(const std::vector<int64_t>& ids);
    // The colour `id` was last given; invalid for a run never assigned.
    QColor color(int64_t id) const;

    // Distinct colours (matplotlib's tab10); a slot beyond them wraps around.
    static QColor paletteColor(int slot);
    // The colour of a run state, the same on every page.
    static QColor stateColor(RunState state);

private:
    std::map<int64_t, int> m_slots;
    std::set<int64_t> m_shown; // the runs of the previous assign()
};

} // namespace parallax
