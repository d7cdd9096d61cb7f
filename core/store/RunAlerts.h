#pragma once

#include "core/store/StoreConnection.h"
#include "core/store/StoreTypes.h"

#include <cstdint>
#include <vector>

namespace parallax {

// What a run's supervisor found wrong while it goes (a hang, a straggler): the newest alert of each
// kind, active while it lasts (see RunStore for each call).
class RunAlerts {
public:
    explicit RunAlerts(StoreConnection& connection) : m_c(connection) {}

    void setAlert(int64_t run, const RunAlert& alert);
    std::vector<RunAlert> alerts(int64_t run) const;
    void deleteRunRows(int64_t run);

private:
    StoreConnection& m_c;
};

} // namespace parallax
