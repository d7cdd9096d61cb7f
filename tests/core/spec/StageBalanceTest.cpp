#include "core/spec/Estimates.h"
#include "core/spec/ModelDims.h"
#include "core/spec/ModelKinds.h"
#include "core/spec/StageBalance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace parallax {
namespace {

// Qwen2.5-VL's tiny preset: a vision tower of 4 blocks before a language model of 2.
RunSpec vlTiny(int64_t pp) {
    RunSpec s;
    s.model.kind = ModelKind::Qwen2_5_Vl;
    s.model.preset = "tiny";
    s.parallel.pp = pp;
    return s;
}

size_t unitCount(const RunSpec& spec) {
    const ModelDims d = resolveModel(spec.model);
    return modelKindInfo(d.kind).units(d).size();
}

// Every unit 1 ms forward and 2 ms backward, except those listed, which take `slow` times as long.
std::vector<MeasuredUnit> times(size_t units, const std::vector<int>& slowUnits, double slow) {
    std::vector<MeasuredUnit> out;
    for (size_t u = 0; u < units; ++u) {
        MeasuredUnit m;
        m.unit = static_cast<int>(u);
        m.forward_ms = 1;
        m.backward_ms = 2;
        for (int s : slowUnits)
            if (s == static_cast<int>(u)) {
                m.forward_ms *= slow;
                m.backward_ms *= slow;
            }
        out.push_back(m);
    }
    return out;
}

TEST(StageBalance, MovesBlocksOffTheSlowStage) {
    const RunSpec spec = vlTiny(2);
    const size_t n = unitCount(spec);
    // The four vision blocks (units 1 to 4, after the patch embedding) are three times as slow as
    // the rest.
    const std::vector<int> slow = {1, 2, 3, 4};
    const StageBalance b = balanceStages(spec, times(n, slow, 3.0));
    ASSERT_EQ(b.layers.size(), 2u);
    ASSERT_EQ(b.before_layers.size(), 2u);
    EXPECT_EQ(b.layers[0] + b.layers[1], b.before_layers[0] + b.before_layers[1]);
    EXPECT_LT(b.slowest(), b.slowestBefore());
    // The split the spec writes back places the units as the balance said.
    RunSpec written = spec;
    written.parallel.stage_layers = b.layers;
    EXPECT_EQ(pipelinePieces(written, resolveModel(spec.model)), b.layers);
    // Stage times account for every unit exactly once.
    double total = 0;
    for (double ms : b.stage_ms) total += ms;
    double totalBefore = 0;
    for (double ms : b.before_ms) totalBefore += ms;
    EXPECT_DOUBLE_EQ(total, totalBefore);
    EXPECT_DOUBLE_EQ(total, 3.0 * double(n - 4) + 9.0 * 4);
}

TEST(StageBalance, NoSplitIsFasterThanTheOneItChooses) {
    const RunSpec spec = vlTiny(2);
    const size_t n = unitCount(spec);
    std::vector<MeasuredUnit> t = times(n, {1, 2}, 5.0);
    const StageBalance b = balanceStages(spec, t);
    const int64_t blocks = b.layers[0] + b.layers[1];
    for (int64_t first = 1; first < blocks; ++first) {
        RunSpec other = spec;
        other.parallel.stage_layers = {first, blocks - first};
        const StageBalance o = balanceStages(other, t);
        EXPECT_LE(b.slowest(), o.slowestBefore() + 1e-9) << "stage_layers = [" << first << ", " << blocks - first << "]";
    }
}

TEST(StageBalance, ReplicasOfAUnitAreAveraged) {
    const RunSpec spec = vlTiny(2);
    const size_t n = unitCount(spec);
    std::vector<MeasuredUnit> t = times(n, {}, 1.0);
    MeasuredUnit replica = t[0];
    replica.forward_ms = 3; // the other replica took 1
    t.push_back(replica);
    const StageBalance b = balanceStages(spec, t);
    double total = 0;
    for (double ms : b.stage_ms) total += ms;
    EXPECT_DOUBLE_EQ(total, 3.0 * double(n) + 1.0); // unit 0: (1 + 3) / 2 + 2
}

std::string errorOf(const RunSpec& spec, const std::vector<MeasuredUnit>& t) {
    try {
        balanceStages(spec, t);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

TEST(StageBalance, SaysWhatIsMissingOrWrong) {
    const RunSpec spec = vlTiny(2);
    const size_t n = unitCount(spec);
    std::vector<MeasuredUnit> t = times(n, {}, 1.0);
    std::vector<MeasuredUnit> missing(t.begin(), t.end() - 1);
    EXPECT_NE(errorOf(spec, missing).find("unit " + std::to_string(n - 1)), std::string::npos) << errorOf(spec, missing);
    std::vector<MeasuredUnit> extra = t;
    extra.push_back({static_cast<int>(n), 1, 1});
    EXPECT_NE(errorOf(spec, extra).find("another model"), std::string::npos);
    std::vector<MeasuredUnit> nan = t;
    nan[3].backward_ms = std::nan("");
    EXPECT_NE(errorOf(spec, nan).find("unit 3"), std::string::npos);
    EXPECT_NE(errorOf(vlTiny(1), t).find("parallel.pp"), std::string::npos);
    RunSpec interleaved = vlTiny(2);
    interleaved.parallel.schedule = Schedule::Interleaved;
    interleaved.parallel.virtual_stages = 2;
    EXPECT_NE(errorOf(interleaved, t).find("interleaved"), std::string::npos);
}

} // namespace
} // namespace parallax
