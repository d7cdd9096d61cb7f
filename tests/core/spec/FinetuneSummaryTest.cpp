// What New run says a fine-tune trains, part by part, and the memory per device of the same model
// trained whole, with its parts frozen and with LoRA: from the model's own tensor table, agreeing
// with the estimates' totals.
#include "core/spec/FinetuneSummary.h"
#include "core/spec/SpecIO.h"

#include <gtest/gtest.h>

namespace parallax {
namespace {

RunSpec vlSpec(const std::string& finetune) {
    return parseSpec("[model]\nkind = \"qwen2_5_vl\"\npreset = \"7b\"\n[finetune]\n" + finetune);
}

TEST(FinetuneSummary, PartsAddUpToTheEstimatesAndSayWhatTrains) {
    const RunSpec spec = vlSpec("mode = \"lora\"\nlora_r = 64\nlora_targets = [\"q_proj\", \"k_proj\", \"v_proj\", \"o_proj\"]");
    const std::vector<PartTraining> parts = partTraining(resolveModel(spec), spec.finetune);
    ASSERT_EQ(parts.size(), 3u);
    EXPECT_EQ(parts[0].part, ModelPart::Vision);
    EXPECT_EQ(parts[1].part, ModelPart::Merger);
    EXPECT_EQ(parts[2].part, ModelPart::Language);
    const Estimates e = estimate(spec);
    int64_t elements = 0, adapters = 0;
    for (const PartTraining& p : parts) {
        elements += p.elements;
        adapters += p.adapters + p.saved;
    }
    EXPECT_EQ(elements, e.params);
    EXPECT_EQ(adapters, e.adapter_params);
    EXPECT_TRUE(parts[0].frozen());
    EXPECT_TRUE(parts[1].frozen());
    // 28 layers: q (3584 -> 3584), k and v (3584 -> 512), o (3584 -> 3584), r 64 each.
    EXPECT_EQ(parts[2].adapters, 28 * 64 * ((3584 + 3584) + 2 * (3584 + 512) + (3584 + 3584)));
    EXPECT_EQ(parts[2].adapted, (std::vector<std::string>{"q_proj", "k_proj", "v_proj", "o_proj"}));
    EXPECT_EQ(describePartTraining(parts[2], spec.finetune),
              "language model: LoRA r 64 on q_proj, k_proj, v_proj, o_proj (40.4M adapter parameters); its 7.62B "
              "weights frozen");
    EXPECT_EQ(describePartTraining(parts[0], spec.finetune), "vision tower: frozen (" +
                                                                 formatCount(double(parts[0].elements)) + ")");

    const RunSpec full = vlSpec("mode = \"full\"\nfreeze_merger = false");
    const std::vector<PartTraining> fullParts = partTraining(resolveModel(full), full.finetune);
    EXPECT_TRUE(fullParts[0].frozen());
    EXPECT_EQ(fullParts[1].trained, fullParts[1].elements);
    EXPECT_EQ(describePartTraining(fullParts[1], full.finetune),
              "merger: trains (" + formatCount(double(fullParts[1].elements)) + ")");
}

TEST(FinetuneSummary, MemoryFallsFromFullToFrozenPartsToLora) {
    const RunSpec spec = vlSpec("mode = \"lora\"");
    const std::vector<FinetuneMemoryRow> rows = finetuneMemoryRows(spec);
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].label, "full");
    EXPECT_EQ(rows[1].label, "full, vision tower, merger frozen");
    EXPECT_EQ(rows[2].label, "LoRA r 8");
    EXPECT_FALSE(rows[0].current);
    EXPECT_FALSE(rows[1].current);
    EXPECT_TRUE(rows[2].current);
    EXPECT_GT(rows[0].estimates.memory.total(), rows[1].estimates.memory.total());
    EXPECT_GT(rows[1].estimates.memory.total(), rows[2].estimates.memory.total());
    // The optimizer holds state only for what trains.
    EXPECT_EQ(rows[0].estimates.trainable_params, rows[0].estimates.params);
    EXPECT_LT(rows[2].estimates.trainable_params, rows[2].estimates.params / 100);

    // A full fine-tune with nothing frozen is the first row, and there is no second.
    const std::vector<FinetuneMemoryRow> whole =
        finetuneMemoryRows(vlSpec("mode = \"full\"\nfreeze_vision = false\nfreeze_merger = false"));
    ASSERT_EQ(whole.size(), 2u);
    EXPECT_TRUE(whole[0].current);
    EXPECT_EQ(whole[1].label, "LoRA r 8");

    EXPECT_TRUE(finetuneMemoryRows(parseSpec("[model]\nkind = \"gpt\"\n")).empty());
    const RunSpec gpt = parseSpec("[model]\nkind = \"gpt\"\n");
    EXPECT_TRUE(partTraining(resolveModel(gpt), gpt.finetune).empty());
}

} // namespace
} // namespace parallax
