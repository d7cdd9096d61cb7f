#include "ui/models/RunColors.h"

#include "core/store/StoreTypes.h"

#include <iterator>

namespace parallax {

QColor RunColors::stateColor(RunState state) {
    switch (state) {
    case RunState::Running: return QColor(0x1f, 0x77, 0xd0);
    case RunState::Queued: return QColor(0x80, 0x80, 0x80);
    case RunState::Succeeded: return QColor(0x2e, 0x8b, 0x3a);
    case RunState::Failed: return QColor(0xc6, 0x28, 0x28);
    case RunState::Stopped: return QColor(0xb8, 0x86, 0x0b);
    case RunState::Lost: return QColor(0x8e, 0x44, 0xad);
    }
    return {};
}

QColor RunColors::paletteColor(int slot) {
    static const QColor colors[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c),
                                    QColor(0xd6, 0x27, 0x28), QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                                    QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f), QColor(0xbc, 0xbd, 0x22),
                                    QColor(0x17, 0xbe, 0xcf)};
    const int n = int(std::size(colors));
    return colors[((slot % n) + n) % n];
}

std::vector<QColor> RunColors::assign(const std::vector<int64_t>& ids) {
    std::set<int> used;
    std::set<int64_t> placed;
    // Runs that stayed on the plot keep their colour first.
    for (int64_t id : ids) {
        if (!m_shown.count(id)) continue;
        auto it = m_slots.find(id);
        if (it != m_slots.end() && used.insert(it->second).second) placed.insert(id);
    }
    // Runs coming back take their old colour if it is free; new ones the first free colour.
    for (int64_t id : ids) {
        if (placed.count(id)) continue;
        auto it = m_slots.find(id);
        if (it != m_slots.end() && used.insert(it->second).second) {
            placed.insert(id);
            continue;
        }
        int slot = 0;
        while (used.count(slot)) ++slot;
        used.insert(slot);
        m_slots[id] = slot;
        placed.insert(id);
    }
    m_shown = std::set<int64_t>(ids.begin(), ids.end());
    std::vector<QColor> out;
    out.reserve(ids.size());
    for (int64_t id : ids) out.push_back(paletteColor(m_slots[id]));
    return out;
}

QColor RunColors::color(int64_t id) const {
    auto it = m_slots.find(id);
    return it == m_slots.end() ? QColor() : paletteColor(it->second);
}

} // namespace parallax
