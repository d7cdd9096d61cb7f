// [finetune] and the conversation data fields: read and written, validated with messages naming the
// field, and counted by the estimates (frozen parts, LoRA).
#include "core/spec/Estimates.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecValidator.h"
#include "tests/core/spec/IssueText.h"

#include <gtest/gtest.h>

namespace parallax {
namespace {

std::vector<SpecIssue> issuesOf(const std::string& toml) { return validateSpec(parseSpec(toml)); }


const char* const kVl = "[model]\nkind = \"qwen2_5_vl\"\n";

TEST(Finetune, RoundTripsThroughTomlAndIsWrittenOnlyWhereItApplies) {
    RunSpec spec = parseSpec(std::string(kVl) + R"([finetune]
mode = "lora"
freeze_vision = false
lora_r = 16
lora_alpha = 32
lora_dropout = 0.05
rslora = true
lora_targets = ["q_proj", "v_proj", "qkv"]
modules_to_save = ["lm_head"]
[data]
kind = "conversations"
path = "chats.jsonl"
max_pixels = 200704
min_pixels = 3136
on_truncate = "fail"
)");
    EXPECT_EQ(spec.finetune.mode, FinetuneMode::Lora);
    EXPECT_FALSE(spec.finetune.freeze_vision);
    EXPECT_TRUE(spec.finetune.freeze_merger);
    EXPECT_EQ(spec.finetune.lora_r, 16);
    EXPECT_DOUBLE_EQ(spec.finetune.lora_alpha, 32.0);
    EXPECT_EQ(spec.finetune.lora_targets, (std::vector<std::string>{"q_proj", "v_proj", "qkv"}));
    EXPECT_EQ(spec.data.kind, DataKind::Conversations);
    EXPECT_EQ(spec.data.max_pixels, 200704);
    EXPECT_EQ(spec.data.on_truncate, OnTruncate::Fail);
    const std::string text = toToml(spec);
    EXPECT_NE(text.find("[finetune]\nmode = \"lora\"\n"), std::string::npos) << text;
    const RunSpec again = parseSpec(text);
    EXPECT_EQ(toToml(again), text);
    EXPECT_EQ(again.finetune.modules_to_save, spec.finetune.modules_to_save);
    EXPECT_DOUBLE_EQ(again.finetune.lora_dropout, 0.05);

    // A gpt run's file has no [finetune]; its defaults are written for a published kind.
    EXPECT_EQ(toToml(RunSpec{}).find("[finetune]"), std::string::npos);
    EXPECT_NE(toToml(parseSpec(kVl)).find("[finetune]\nmode = \"full\"\nfreeze_vision = true\n"), std::string::npos);
    // Set on a gpt run, it is written (and warned about).
    RunSpec gpt;
    gpt.finetune.lora_r = 4;
    EXPECT_NE(toToml(gpt).find("[finetune]"), std::string::npos);
    EXPECT_EQ(parseSpec(toToml(gpt)).finetune.lora_r, 4);
}

TEST(Finetune, ValidationNamesTheFieldAndTheFix) {
    auto issues = issuesOf(std::string(kVl) + "[finetune]\nmode = \"lorra\"\n");
    EXPECT_TRUE(hasIssue(issues, "finetune.mode", "finetune.mode = \"lorra\" is unknown; use one of full, lora; did you mean "
                                             "\"lora\"?",
                    false))
        << describe(issues);

    issues = issuesOf(std::string(kVl) + "[finetune]\nmode = \"lora\"\nlora_targets = [\"qproj\", \"v_proj\", \"v_proj\"]\n");
    EXPECT_TRUE(hasIssue(issues, "finetune.lora_targets",
                    "finetune.lora_targets[0] = \"qproj\" is no Linear of model.kind = \"qwen2_5_vl\" that LoRA adapts; "
                    "its Linears are gate_proj, up_proj, down_proj, q_proj, k_proj, v_proj, o_proj, qkv, proj, mlp.0, "
                    "mlp.2; did you mean \"q_proj\"?",
                    false))
        << describe(issues);
    EXPECT_TRUE(hasIssue(issues, "finetune.lora_targets", "finetune.lora_targets[2] = \"v_proj\" is named twice", true));

    issues = issuesOf(std::string(kVl) + "[finetune]\nmode = \"lora\"\nlora_targets = [\"qkv\", \"q_proj\"]\n");
    EXPECT_TRUE(hasIssue(issues, "finetune.lora_targets",
                    "finetune.lora_targets[0] = \"qkv\" names Linears of the vision tower only, which "
                    "finetune.freeze_vision = true freezes: set finetune.freeze_vision = false to adapt them, or remove it",
                    false))
        << describe(issues);
    // With the tower not frozen, qkv is adapted; gate_proj then adapts the tower's too (no error).
    issues = issuesOf(std::string(kVl) + "[finetune]\nmode = \"lora\"\nfreeze_vision = false\nlora_targets = [\"qkv\"]\n");
    EXPECT_FALSE(hasIssue(issues, "finetune.lora_targets", "", false)) << describe(issues);

    issues = issuesOf(std::string(kVl) + "[finetune]\nfreeze_llm = true\n");
    EXPECT_TRUE(hasIssue(issues, "finetune.freeze_llm",
                    "every part of the model is frozen (finetune.freeze_vision, freeze_merger and freeze_llm): nothing "
                    "would train; set finetune.freeze_llm = false",
                    false))
        << describe(issues);
    issues = issuesOf(std::string(kVl) + "[finetune]\nmode = \"lora\"\nfreeze_llm = true\n");
    EXPECT_TRUE(hasIssue(issues, "finetune.lora_targets", "nothing would train", false)) << describe(issues);
    // A module to save trains even so.
    issues = issuesOf(std::string(kVl) + "[finetune]\nmode = \"lora\"\nfreeze_llm = true\nmodules_to_save = [\"merger\"]\n");
    EXPECT_FALSE(hasIssue(issues, "finetune.lora_targets", "nothing would train", false)) << describe(issues);
    EXPECT_TRUE(hasIssue(issues, "finetune.modules_to_save",
                    "finetune.modules_to_save[0] = \"merger\" lies in the merger, which finetune.freeze_merger = true "
                    "freezes; a whole copy of it trains all the same",
                    true));

    issues = issuesOf("[model]\nkind = \"qwen2_5_vl\"\npreset = \"tiny-tied\"\n[finetune]\nmode = \"lora\"\n"
                      "modules_to_save = [\"lm_head\"]\nlora_r = 0\nlora_alpha = 0\nlora_dropout = 1.0\n");
    EXPECT_TRUE(hasIssue(issues, "finetune.modules_to_save",
                         "finetune.modules_to_save trains lm_head but not model.embed_tokens, which this model ties "
                         "to it (tie_word_embeddings = true): they are one weight; name both or neither",
                         false))
        << describe(issues);
    EXPECT_TRUE(hasIssue(issues, "finetune.lora_r", "finetune.lora_r = 0 must be at least 1", false));
    EXPECT_TRUE(hasIssue(issues, "finetune.lora_alpha", "must be a number greater than 0", false));
    EXPECT_TRUE(hasIssue(issues, "finetune.lora_dropout", "finetune.lora_dropout = 1.0 must be in [0, 1)", false));

    // Fields that do not apply are warnings.
    issues = issuesOf(std::string(kVl) + "[finetune]\nlora_r = 16\n");
    EXPECT_TRUE(hasIssue(issues, "finetune.lora_r", "finetune.lora_r is used only with finetune.mode = \"lora\"", true));
    issues = issuesOf("[model]\nkind = \"qwen2\"\n[finetune]\nfreeze_vision = false\n");
    EXPECT_TRUE(hasIssue(issues, "finetune.freeze_vision", "model.kind = \"qwen2\" has no vision tower or merger", true));
    issues = issuesOf("[finetune]\nmode = \"lora\"\n");
    EXPECT_TRUE(hasIssue(issues, "finetune.mode", "finetune.mode is used only by model.kind = \"qwen2_5_vl\", \"qwen2\" or \"qwen_image\"",
                    true))
        << describe(issues);
    EXPECT_FALSE(hasErrors(issues)) << describe(issues);
    issues = issuesOf(std::string(kVl) + "freeze_vision = true\n");
    EXPECT_TRUE(hasIssue(issues, "model.freeze_vision", "did you mean finetune.freeze_vision?", true)) << describe(issues);

    // Tied heads train too, both places of the weight saved together, over at most two stages.
    EXPECT_FALSE(hasErrors(issuesOf(kVl))) << describe(issuesOf(kVl));
    const std::string tied = "[model]\nkind = \"qwen2_5_vl\"\npreset = \"tiny-tied\"\n";
    EXPECT_FALSE(hasErrors(issuesOf(tied))) << describe(issuesOf(tied));
    EXPECT_FALSE(hasErrors(issuesOf(tied + "[finetune]\nmode = \"lora\"\nmodules_to_save = [\"embed_tokens\", \"lm_head\"]\n")));
    EXPECT_TRUE(hasIssue(issuesOf(tied + "[parallel]\npp = 3\n"), "parallel.pp", "ties lm_head to embed_tokens", false));
}

TEST(Finetune, ConversationDataIsCheckedAtTheSpecLevel) {
    auto issues = issuesOf("[data]\nkind = \"conversations\"\npath = \"/no/such/chats.json\"\n");
    EXPECT_TRUE(hasIssue(issues, "data.kind", "data.kind = \"conversations\" is read by model.kind = \"qwen2_5_vl\" or "
                                         "\"qwen2\"; model.kind = \"gpt\" reads other data",
                    false))
        << describe(issues);
    EXPECT_TRUE(hasIssue(issues, "data.path", "data.path = \"/no/such/chats.json\" does not exist", false));

    issues = issuesOf(std::string(kVl) + "[data]\nkind = \"conversations\"\npath = \"/\"\n");
    EXPECT_TRUE(hasIssue(issues, "data.max_pixels",
                    "an image of data.max_pixels = 589824 takes up to 754 tokens with its vision_start and vision_end, "
                    "more than model.seq_len = 256",
                    false))
        << describe(issues);
    // 196,000 pixels: 250 tokens and their two markers fit in 256.
    issues = issuesOf(std::string(kVl) + "[data]\nkind = \"conversations\"\npath = \"/\"\nmax_pixels = 196000\n"
                                         "min_pixels = 300000\non_truncate = \"cut\"\n");
    EXPECT_FALSE(hasIssue(issues, "data.max_pixels", "", false)) << describe(issues);
    EXPECT_TRUE(hasIssue(issues, "data.min_pixels", "data.min_pixels = 300000 is more than data.max_pixels = 196000", false));
    EXPECT_TRUE(hasIssue(issues, "data.on_truncate", "data.on_truncate = \"cut\" is unknown; use one of drop, fail", false));
    issues = issuesOf(std::string(kVl) + "[data]\nmax_pixels = 100\n");
    EXPECT_TRUE(hasIssue(issues, "data.max_pixels", "data.max_pixels = 100 must be at least 784", false)) << describe(issues);
    issues = issuesOf("[data]\nmax_pixels = 1000000\nmin_pixels = 4\n");
    EXPECT_TRUE(hasIssue(issues, "data.max_pixels", "used only by model.kind = \"qwen2_5_vl\"", true)) << describe(issues);
    EXPECT_TRUE(hasIssue(issues, "data.min_pixels", "used only with data.kind = \"conversations\"", true));
    // Read on the compute nodes: a path missing here is a warning.
    issues = issuesOf(std::string(kVl) + "[data]\nkind = \"conversations\"\npath = \"/no/such.jsonl\"\n"
                                         "max_pixels = 3136\n[launch]\ntarget = \"slurm\"\n");
    EXPECT_TRUE(hasIssue(issues, "data.path", "(checked on this machine; the compute nodes read it)", true)) << describe(issues);
}

// The tiny Qwen2.5-VL (untied), counted by hand:
//   tower: patch 32 x 1,176 = 37,632; a block 64 + (3,072 + 96) + (1,024 + 32) + 2 (1,536 + 48) +
//          (1,536 + 32) = 9,024, four of them 36,096                                     -> 73,728
//   merger: 32 + (128 x 128 + 128) + (64 x 128 + 64)                                       -> 24,800
//   language model: embedding and head 151,936 x 64 = 9,723,904 each; a layer q 4,160, k and v
//          2,080 each, o 4,096, gate, up and down 8,192 each, norms 128 = 37,120, two 74,240;
//          final norm 64                                                                   -> 19,522,112
// LoRA of rank 8 on a layer's q (64 -> 64), k, v (64 -> 32), o, gate, up (64 -> 128), down:
//   8 x (128 + 96 + 96 + 128 + 192 + 192 + 192) = 8,192 a layer, 16,384 in all.
TEST(Finetune, EstimatesCountFrozenPartsAndLora) {
    RunSpec spec = parseSpec(std::string(kVl) + "[data]\nmax_pixels = 3136\n");
    const Estimates full = estimate(spec);
    EXPECT_EQ(full.params, 73728 + 24800 + 19522112);
    EXPECT_EQ(full.trainable_params, 19522112) << "the tower and the merger are frozen by default";
    EXPECT_EQ(full.adapter_params, 0);
    // fp32: trainable parameters 4 + 4 + 8 bytes, frozen ones 4.
    EXPECT_DOUBLE_EQ(full.memory.weights, 4.0 * (19522112 + 98528));
    EXPECT_DOUBLE_EQ(full.memory.gradients, 4.0 * 19522112);
    EXPECT_DOUBLE_EQ(full.memory.optimizer, 8.0 * 19522112);

    spec.finetune.mode = FinetuneMode::Lora;
    const Estimates lora = estimate(spec);
    EXPECT_EQ(lora.params, full.params);
    EXPECT_EQ(lora.adapter_params, 16384);
    EXPECT_EQ(lora.trainable_params, 16384);
    EXPECT_DOUBLE_EQ(lora.memory.weights, 4.0 * (19620640 + 16384));
    EXPECT_DOUBLE_EQ(lora.memory.gradients, 4.0 * 16384);
    EXPECT_DOUBLE_EQ(lora.memory.optimizer, 8.0 * 16384);
    EXPECT_DOUBLE_EQ(lora.memory.activations, full.memory.activations) << "both start keeping at the first layer";
    // Under bf16 a frozen weight keeps its bf16 copy only; a trained one also its fp32 master.
    spec.train.precision = Precision::Bf16;
    EXPECT_DOUBLE_EQ(estimate(spec).memory.weights, 6.0 * 16384 + 2.0 * 19620640);
    spec.train.precision = Precision::Fp32;

    // The tower unfrozen under LoRA: the default targets' gate_proj, up_proj and down_proj now
    // adapt its blocks too: 8 x ((32 + 48) x 3) = 1,920 a block, 7,680 for four.
    spec.finetune.freeze_vision = false;
    EXPECT_EQ(estimate(spec).adapter_params, 16384 + 7680);
    // Modules to save: a trainable copy of lm_head.
    spec.finetune.freeze_vision = true;
    spec.finetune.modules_to_save = {"lm_head"};
    EXPECT_EQ(estimate(spec).trainable_params, 16384 + 9723904);

    // A tower that trains keeps its activations: at 56 x 56 pixels (16 patches, 4 tokens) per
    // sample the patch embedding's input 16 x 1,176 = 18,816, each block 16 (8 x 32 + 4 x 48) +
    // 2 x 16 x 16 = 7,680 (four: 30,720), the merger 2 x 16 x 32 + 2 x 4 x 128 = 2,048: 51,584
    // values, x 4 samples x 4 bytes.
    spec.finetune = FinetuneSpec{};
    const double frozenTower = estimate(spec).memory.activations;
    spec.finetune.freeze_vision = false;
    EXPECT_DOUBLE_EQ(estimate(spec).memory.activations - frozenTower, 51584.0 * 4 * 4);
}

} // namespace
} // namespace parallax
