#pragma once

#include "trainer/comm/Communicator.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// What the ranks tell each other (collectives over `world`; every rank gets every rank's value, or
// the one all agree on).

// Every rank gets the message (`failure`, "" for none) of the failed rank of least number, "" when
// no rank failed: what lets every rank end alike (AgreedFailure).
std::string firstFailure(const std::string& failure, Communicator& world);

// At the start of a run: every rank's host name.
std::vector<std::string> gatherHosts(Communicator& world);
// Every rank's process id, so that the supervisor can end each one on its host.
std::vector<int64_t> gatherPids(Communicator& world);
// Offsets of every rank's clock from rank 0's (rank clock - rank 0 clock, seconds), from ping-pong
// exchanges with rank 0 (the one of least delay wins).
std::vector<double> alignClocks(Communicator& world);

} // namespace parallax
