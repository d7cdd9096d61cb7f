// NCCL matches point-to-point messages by order, not by tag: the k-th send from rank a to rank b meets
// b's k-th receive from a. NcclCommunicator gives each direction between neighbouring stages its own
// channel, so the pipeline works over NCCL exactly when, for every schedule, each ordered pair of
// ranks receives messages in the order they were sent. This replays PipelineEngine's message
// pattern (activations forward after each forward, gradients back after each backward, blocking
// receives, non-blocking sends) over those channels and checks that every receive meets the message
// the engine means, and that no rank waits forever even when a send waits for its receive.

#include "trainer/parallel/PipelineSchedule.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

using namespace parallax;

namespace {

// What travels: the receiving virtual stage, the micro-batch and the direction.
struct Message {
    int virtualStage = 0;
    int microbatch = 0;
    bool gradient = false;
    bool operator==(const Message& o) const {
        return virtualStage == o.virtualStage && microbatch == o.microbatch && gradient == o.gradient;
    }
};

std::string describe(const Message& m) {
    std::ostringstream o;
    o << (m.gradient ? "gradient" : "activation") << " for virtual stage " << m.virtualStage << ", micro-batch "
      << m.microbatch;
    return o.str();
}

// One step of a rank's program in the engine's order.
struct Op {
    enum class Kind { Send, Recv } kind;
    int peer;
    Message message;
};

// The operations PipelineEngine::runStep issues on pipeline rank `stage`.
std::vector<Op> engineProgram(Schedule schedule, int stages, int stage, int microbatches, int chunks) {
    const int virtualStages = stages * chunks;
    auto rankOf = [&](int vs) { return vs % stages; };
    std::vector<Op> ops;
    for (const PipelineAction& a : pipelineSchedule(schedule, stages, stage, microbatches, chunks)) {
        const int vs = a.chunk * stages + stage;
        if (a.kind == PipelineAction::Kind::WeightGrad) continue; // local work, no message
        if (a.kind == PipelineAction::Kind::Forward) {
            if (vs > 0) ops.push_back({Op::Kind::Recv, rankOf(vs - 1), {vs, a.microbatch, false}});
            if (vs < virtualStages - 1) ops.push_back({Op::Kind::Send, rankOf(vs + 1), {vs + 1, a.microbatch, false}});
        } else {
            if (vs < virtualStages - 1) ops.push_back({Op::Kind::Recv, rankOf(vs + 1), {vs, a.microbatch, true}});
            if (vs > 0) ops.push_back({Op::Kind::Send, rankOf(vs - 1), {vs - 1, a.microbatch, true}});
        }
    }
    return ops;
}

using Programs = std::vector<std::vector<Op>>;

Programs schedulePrograms(Schedule schedule, int stages, int microbatches, int chunks) {
    Programs programs;
    for (int s = 0; s < stages; ++s) programs.push_back(engineProgram(schedule, stages, s, microbatches, chunks));
    return programs;
}

// Replays every rank's program over one channel per (sender, receiver). A receive blocks its rank
// until the channel's next message has been sent; a send never blocks the rank (it is queued on its
// channel's stream, and a channel carries one direction between two ranks only). Returns "" on
// success, else what went wrong.
std::string replay(const Programs& programs) {
    const int stages = static_cast<int>(programs.size());
    std::map<std::pair<int, int>, std::deque<Message>> channels; // (from, to) -> sent, not yet received
    std::vector<size_t> next(programs.size(), 0);
    bool moved = true;
    while (moved) {
        moved = false;
        for (int s = 0; s < stages; ++s) {
            auto& pc = next[static_cast<size_t>(s)];
            const auto& program = programs[static_cast<size_t>(s)];
            while (pc < program.size()) {
                const Op& op = program[pc];
                if (op.kind == Op::Kind::Send) {
                    channels[{s, op.peer}].push_back(op.message);
                } else {
                    auto& queue = channels[{op.peer, s}];
                    if (queue.empty()) break; // blocked until the peer sends
                    if (!(queue.front() == op.message)) {
                        std::ostringstream o;
                        o << "rank " << s << " expects the " << describe(op.message) << " from rank " << op.peer
                          << " but the next message on that channel is the " << describe(queue.front());
                        return o.str();
                    }
                    queue.pop_front();
                }
                ++pc;
                moved = true;
            }
        }
    }
    for (int s = 0; s < stages; ++s) {
        const auto pc = next[static_cast<size_t>(s)];
        if (pc < programs[static_cast<size_t>(s)].size()) {
            const Op& op = programs[static_cast<size_t>(s)][pc];
            return "rank " + std::to_string(s) + " waits forever for the " + describe(op.message) + " from rank " +
                   std::to_string(op.peer);
        }
    }
    for (const auto& [pair, queue] : channels)
        if (!queue.empty())
            return "rank " + std::to_string(pair.first) + " sent the " + describe(queue.front()) + " to rank " +
                   std::to_string(pair.second) + ", which never receives it";
    return "";
}

std::string replay(Schedule schedule, int stages, int microbatches, int chunks) {
    return replay(schedulePrograms(schedule, stages, microbatches, chunks));
}

TEST(PipelineMessageOrder, EverySchedulesMessagesMeetInOrderPerChannel) {
    int checked = 0;
    for (const Schedule schedule : {Schedule::GPipe, Schedule::OneFOneB, Schedule::ZeroBubble}) {
        for (int stages = 2; stages <= 8; ++stages) {
            for (int m = 1; m <= 16; ++m) {
                EXPECT_EQ(replay(schedule, stages, m, 1), "") << choiceName(schedule) << " pp=" << stages << " m=" << m;
                ++checked;
            }
        }
    }
    for (int stages = 2; stages <= 8; ++stages) {
        for (int chunks = 2; chunks <= 4; ++chunks) {
            for (int m = stages; m <= 4 * stages; m += stages) {
                EXPECT_EQ(replay(Schedule::Interleaved, stages, m, chunks), "")
                    << "interleaved pp=" << stages << " chunks=" << chunks << " m=" << m;
                ++checked;
            }
        }
    }
    EXPECT_GT(checked, 400);
}

TEST(PipelineMessageOrder, ReplayDetectsReordering) {
    // The check must be able to fail: the first stage taking its gradients in reverse micro-batch
    // order meets another micro-batch's gradient first.
    Programs programs = schedulePrograms(Schedule::GPipe, 2, 3, 1);
    auto& first = programs[0];
    std::vector<size_t> recvs;
    for (size_t i = 0; i < first.size(); ++i)
        if (first[i].kind == Op::Kind::Recv) recvs.push_back(i);
    ASSERT_EQ(recvs.size(), 3u);
    std::swap(first[recvs.front()], first[recvs.back()]);
    const std::string error = replay(programs);
    EXPECT_NE(error.find("expects the gradient for virtual stage 0, micro-batch 2"), std::string::npos) << error;
}

TEST(PipelineMessageOrder, ReplayDetectsRanksWaitingForEachOther) {
    // Both ranks receive before they send: neither message is ever sent.
    Programs programs(2);
    programs[0] = {{Op::Kind::Recv, 1, {0, 0, true}}, {Op::Kind::Send, 1, {1, 0, false}}};
    programs[1] = {{Op::Kind::Recv, 0, {1, 0, false}}, {Op::Kind::Send, 0, {0, 0, true}}};
    EXPECT_NE(replay(programs).find("waits forever"), std::string::npos);
}

TEST(PipelineMessageOrder, ProgramsMatchTheEnginesMessageCount) {
    // 1F1B on 4 stages, 8 micro-batches: inner stages send and receive one activation and one
    // gradient per micro-batch, the ends half of that.
    const int stages = 4, m = 8;
    for (int s = 0; s < stages; ++s) {
        int sends = 0, recvs = 0;
        for (const Op& op : engineProgram(Schedule::OneFOneB, stages, s, m, 1))
            (op.kind == Op::Kind::Send ? sends : recvs)++;
        const int expected = (s == 0 || s == stages - 1) ? m : 2 * m;
        EXPECT_EQ(sends, expected) << "stage " << s;
        EXPECT_EQ(recvs, expected) << "stage " << s;
    }
}

} // namespace
