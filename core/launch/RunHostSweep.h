#pragma once

#include "core/launch/NoticeSink.h"
#include "core/spec/ClusterProfile.h"
#include "core/store/RunStore.h"

#include <cstdint>
#include <exception>
#include <functional>
#include <string>

namespace parallax {

// At a run's end on hosts: ends what is left of the run (processes of its folder `runDir`) on
// every host of `cluster`, saying what was still running. A host that cannot be reached now is
// kept in the store as a pending cleanup, done once it answers again (parallax-cli cleanup).
// Returns whether one was kept; a store that refuses the row goes to `onStoreError`.
bool sweepRunHosts(RunStore& store, const ClusterProfile& cluster, int64_t runId, const std::string& runDir,
                   NoticeSink& notices, const std::function<void(const std::exception&)>& onStoreError);

} // namespace parallax
