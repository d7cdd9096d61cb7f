#include "core/spec/ScheduleInfo.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace parallax {

namespace {

// In Schedule's order.
constexpr ScheduleInfo kSchedules[] = {
    {Schedule::GPipe, /*chunked=*/false, /*refusesChunks=*/false, /*splitBackward=*/false, 1,
     "(p - 1) / (m + p - 1)"},
    {Schedule::OneFOneB, false, false, false, 1, "(p - 1) / (m + p - 1)"},
    {Schedule::Interleaved, true, false, false, 1, "(p - 1) / (v m + p - 1)"},
    {Schedule::ZeroBubble, false, true, true, 3, "(p - 1) / (3 m + p - 1)"},
};
static_assert(std::extent_v<decltype(kSchedules)> == kChoiceCount<Schedule>, "a row per Schedule");

} // namespace

const ScheduleInfo& scheduleInfo(Schedule schedule) {
    const size_t i = static_cast<size_t>(schedule);
    if (i >= std::size(kSchedules) || kSchedules[i].schedule != schedule)
        throw std::invalid_argument("parallel.schedule: schedule " + std::to_string(i) + " has no row in this build");
    return kSchedules[i];
}

int64_t modelChunks(const Choice<Schedule>& schedule, int64_t virtualStages) {
    if (!schedule.known() || !scheduleInfo(schedule.value()).chunked) return 1;
    return std::max<int64_t>(1, virtualStages);
}

} // namespace parallax
