#pragma once

#include "core/store/StoreConnection.h"
#include "core/store/StoreTypes.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

// Runs as the console and the CLI look them up: by id, by name, along a lineage of resumes, and
// listed, filtered and sorted in SQL (see RunStore for each call).
class RunQueries {
public:
    explicit RunQueries(StoreConnection& connection) : m_c(connection) {}

    std::optional<RunRecord> run(int64_t id) const;
    std::vector<int64_t> lineage(int64_t id) const;
    std::optional<RunRecord> latestRunNamed(const std::string& name) const;
    std::optional<RunRecord> findRun(const std::string& idOrName) const;
    std::vector<RunRecord> listRuns(const RunFilter& filter) const;

private:
    StoreConnection& m_c;
};

} // namespace parallax
