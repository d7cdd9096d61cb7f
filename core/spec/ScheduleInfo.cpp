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
    {Schedule::GPipe, /*chunked=*/false, /*refusesChunks=*/false, /*splitBackward=*/false, /*forwardsFirst=*/true,
     1, "(p - 1) / (m + p - 1)"},
    {Schedule::OneFOneB, false, false, false, false, 1, "(p - 1) / (m + p - 1)"},
    {Schedule::Interleaved, true, false, false, false, 1, "(p - 1) / (v m + p - 1)"},
    {Schedule::ZeroBubble, false, true, true, false, 3, "(p - 1) / (3 m + p - 1)"},
};
static_assert(std::extent_v<decltype(kSchedules)> == kChoiceCount<Schedule>, "a row per Schedule");

} // namespace

const ScheduleInfo& scheduleInfo(Schedule schedule) {
    const size_t i = static_cast<size_t>(schedule);
    if (i >= std::size(kSchedules) || kSchedules[i].schedule != schedule)
        throw std::invalid_argument("parallel.schedule: schedule " + std::to_string(i) + " has no row in this build");
    return kSchedules[i];
}

const ScheduleInfo* scheduleInfo(const Choice<Schedule>& schedule) {
    return schedule.known() ? &scheduleInfo(schedule.value()) : nullptr;
}

int64_t modelChunks(const Choice<Schedule>& schedule, int64_t virtualStages) {
    const ScheduleInfo* info = scheduleInfo(schedule);
    return info && info->chunked ? std::max<int64_t>(1, virtualStages) : 1;
}

std::string bubbleFormula(const Choice<Schedule>& schedule, int64_t stages, int64_t microbatches, int64_t virtualStages) {
    const ScheduleInfo* info = scheduleInfo(schedule);
    std::string text = std::string((info ? *info : scheduleInfo(Schedule::OneFOneB)).formula) + " with p = " +
                       std::to_string(stages) + ", m = " + std::to_string(microbatches);
    const int64_t v = modelChunks(schedule, virtualStages);
    return v > 1 ? text + ", v = " + std::to_string(v) : text;
}

} // namespace parallax
