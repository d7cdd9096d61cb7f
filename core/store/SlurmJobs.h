#pragma once

#include "core/store/StoreConnection.h"
#include "core/store/StoreTypes.h"

#include <cstdint>
#include <optional>

namespace parallax {

// The Slurm job of each run on Slurm (one per run; the latest replaces the earlier): a batch job
// outlives its supervisor, and the next one follows it by this record.
class SlurmJobs {
public:
    explicit SlurmJobs(StoreConnection& connection) : m_c(connection) {}

    void setSlurmJob(int64_t run, const SlurmJob& job);
    std::optional<SlurmJob> slurmJob(int64_t run) const;
    void deleteRunRows(int64_t run);

private:
    StoreConnection& m_c;
};

} // namespace parallax
