// [finetune] applied from outside the models: what each kind declares (parts, LoRA names), which
// parameters train, LoRA's mathematics and initialization, and the memory frozen parameters save.

#include "tests/trainer/models/ModelTestSupport.h"
#include "trainer/finetune/Finetune.h"
#include "trainer/models/Linear.h"
#include "trainer/parallel/ActivationCheckpoint.h"
#include "trainer/parallel/GradBuckets.h"
#include "trainer/train/AdamW.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

namespace parallax {
namespace {

using test::batchOf;
using test::dimsOf;
using test::meanLoss;

FinetuneSpec loraSpec(std::vector<std::string> targets, int64_t r = 4, double alpha = 8) {
    FinetuneSpec f;
    f.mode = FinetuneMode::Lora;
    f.lora_r = r;
    f.lora_alpha = alpha;
    f.lora_targets = std::move(targets);
    f.freeze_vision = false;
    f.freeze_merger = false;
    return f;
}

std::set<std::string> trainableNames(Model& model) {
    std::set<std::string> out;
    for (const auto& p : model.named_parameters())
        if (p.value().requires_grad()) out.insert(p.key());
    return out;
}

TEST(Finetune, LoraLayerIsThePeftFormulaWithTheBaseFrozen) {
    torch::manual_seed(3);
    Linear layer(6, 5, true, 0.02);
    layer.weight.set_data(torch::randn({5, 6}));
    layer.bias.set_data(torch::randn({5}));
    layer.weight.set_requires_grad(false);
    layer.bias.set_requires_grad(false);
    auto a = std::make_shared<LoraFactor>(3, 6), b = std::make_shared<LoraFactor>(5, 3);
    a->weight.set_data(torch::randn({3, 6}));
    b->weight.set_data(torch::randn({5, 3}));
    layer.adapter = std::make_shared<LoraAdapter>(a, b, 2.5, 0.0);
    const torch::Tensor x0 = torch::randn({2, 4, 6});
    const torch::Tensor dy = torch::randn({2, 4, 5});

    torch::Tensor x = x0.clone().requires_grad_(true);
    (layer.forward(x) * dy).sum().backward();
    // The same by hand, with its own leaves.
    torch::Tensor xr = x0.clone().requires_grad_(true);
    torch::Tensor ar = a->weight.detach().clone().requires_grad_(true), br = b->weight.detach().clone().requires_grad_(true);
    const torch::Tensor want = torch::matmul(xr, layer.weight.t()) + layer.bias + 2.5 * torch::matmul(torch::matmul(xr, ar.t()), br.t());
    (want * dy).sum().backward();

    EXPECT_TRUE(torch::allclose(layer.forward(x0), want.detach(), 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(x.grad(), xr.grad(), 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(a->weight.grad(), ar.grad(), 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(b->weight.grad(), br.grad(), 1e-5, 1e-5));
    EXPECT_FALSE(layer.weight.grad().defined());
    EXPECT_FALSE(layer.bias.grad().defined());
}

TEST(Finetune, GptLoraAdaptsEveryBlockLinearAndFreezesTheRest) {
    const ModelDims dims = dimsOf("gpt", "tiny");
    auto model = buildModel(dims, 5);
    const AppliedFinetune applied = applyFinetune(*model, loraSpec({"q", "k", "v", "proj", "fc1", "fc2"}), 5);
    ASSERT_EQ(applied.adapted.size(), static_cast<size_t>(6 * dims.layers));
    std::set<std::string> want;
    for (int64_t i = 1; i <= dims.layers; ++i)
        for (const char* l : {"q", "k", "v", "proj", "fc1", "fc2"})
            for (const char* f : {"lora_A", "lora_B"})
                want.insert("units." + std::to_string(i) + "." + l + "." + f + ".weight");
    EXPECT_EQ(trainableNames(*model), want);
    EXPECT_EQ(applied.adapted.front().module, "units.1.q");
    EXPECT_EQ(applied.adapted.front().published, "units.1.q");
    EXPECT_DOUBLE_EQ(applied.scale, 2.0);
    int64_t adapters = 0;
    for (const AdaptedLayer& a : applied.adapted) adapters += 4 * (a.in + a.out);
    EXPECT_EQ(applied.trainable, adapters);
    EXPECT_NE(applied.summary().find("LoRA r 4"), std::string::npos) << applied.summary();
}

TEST(Finetune, AdaptersStartAsPeftDrawsThemAndChangeNothing) {
    const ModelDims dims = dimsOf("gpt", "tiny");
    const Batch batch = batchOf(dims, 2);
    auto base = buildModel(dims, 5);
    const double baseLoss = meanLoss(base->forwardAll(batch));
    auto one = buildModel(dims, 5), two = buildModel(dims, 5);
    const AppliedFinetune applied = applyFinetune(*one, loraSpec({"q", "fc1"}), 5);
    applyFinetune(*two, loraSpec({"q", "fc1"}), 5);
    // B = 0: the adapted model computes what the base does.
    EXPECT_DOUBLE_EQ(meanLoss(one->forwardAll(batch)), baseLoss);
    const auto p1 = one->named_parameters(), p2 = two->named_parameters();
    for (const AdaptedLayer& a : applied.adapted) {
        const torch::Tensor A = p1[a.module + ".lora_A.weight"], B = p1[a.module + ".lora_B.weight"];
        EXPECT_TRUE(torch::equal(A, p2[a.module + ".lora_A.weight"])) << a.module; // the seed decides
        EXPECT_EQ(B.abs().max().item<float>(), 0.0f);
        // kaiming-uniform with a = sqrt(5): U(-1/sqrt(in), 1/sqrt(in)), standard deviation bound / sqrt(3).
        const double bound = 1.0 / std::sqrt(static_cast<double>(a.in));
        EXPECT_LE(A.abs().max().item<double>(), bound);
        EXPECT_NEAR(A.std().item<double>(), bound / std::sqrt(3.0), 0.1 * bound) << a.module;
    }
    // Another seed, other numbers; the base's own are untouched by the adapters' stream.
    auto other = buildModel(dims, 5);
    applyFinetune(*other, loraSpec({"q", "fc1"}), 6);
    EXPECT_FALSE(torch::equal(p1["units.1.q.lora_A.weight"], other->named_parameters()["units.1.q.lora_A.weight"]));
    EXPECT_TRUE(torch::equal(p1["units.1.q.weight"], base->named_parameters()["units.1.q.weight"]));
}

TEST(Finetune, QwenImageLoraAdaptsBothStreamsAndTheirModulation) {
    const ModelDims dims = dimsOf("qwen_image", "tiny");
    auto model = buildModel(dims, 5);
    const std::vector<std::string> targets = {"to_q",     "to_k",          "to_v",      "add_q_proj",
                                              "add_k_proj", "add_v_proj",  "to_out.0",  "to_add_out",
                                              "img_mlp.net.2", "img_mod.1", "txt_mlp.net.2", "txt_mod.1"};
    const AppliedFinetune applied = applyFinetune(*model, loraSpec(targets), 5);
    ASSERT_EQ(applied.adapted.size(), targets.size() * static_cast<size_t>(dims.layers));
    const std::string last = "units." + std::to_string(dims.layers) + ".";
    std::set<std::string> silent; // the last block's adapters that no gradient reaches
    for (const AdaptedLayer& a : applied.adapted) {
        EXPECT_EQ(a.module.rfind("units.", 0), 0u) << a.module; // blocks only: embeddings and head declare none
        const bool textOnly = a.module.find("add_q_proj") != std::string::npos ||
                              a.module.find("to_add_out") != std::string::npos ||
                              a.module.find("txt_mlp") != std::string::npos;
        if (a.module.rfind(last, 0) == 0 && textOnly) silent.insert(a.module);
    }
    EXPECT_EQ(silent.size(), 3u);
    for (const AdaptedLayer& a : applied.adapted)
        model->named_parameters()[a.module + ".lora_B.weight"].data().normal_(0, 0.1);
    const Activation out = model->forwardAll(batchOf(dims, 2));
    (out[0] / out[1]).backward();
    for (const AdaptedLayer& a : applied.adapted) {
        for (const char* f : {".lora_A.weight", ".lora_B.weight"}) {
            const torch::Tensor g = model->named_parameters()[a.module + f].grad();
            if (silent.count(a.module)) EXPECT_TRUE(!g.defined() || g.abs().sum().item<double>() == 0) << a.module << f;
            else EXPECT_GT(g.abs().sum().item<double>(), 0) << a.module << f;
        }
    }
    for (const auto& p : model->named_parameters())
        if (p.key().find("lora_") == std::string::npos) EXPECT_FALSE(p.value().requires_grad()) << p.key();
}

// [finetune]'s defaults on qwen2_5_vl: the tower and the merger frozen, no gradient reaches them;
// the language model trains. LoRA then adapts the language model's Linears only.
TEST(Finetune, FrozenVisionTowerAndMergerGetNoGradientAndTheLanguageModelTrains) {
    const ModelDims dims = dimsOf("qwen2_5_vl", "tiny");
    RunSpec spec;
    spec.model.kind = ModelKind::Qwen2_5_Vl;
    const FinetuneSpec defaults = finetuneOf(spec, dims);
    ASSERT_TRUE(defaults.freeze_vision && defaults.freeze_merger && !defaults.freeze_llm);
    auto model = buildModel(dims, 16);
    applyFinetune(*model, defaults, 16);
    const Activation out = model->forwardAll(test::vlImageBatch(dims, 2));
    (out[0] / out[1]).backward();
    int64_t frozen = 0, trained = 0;
    for (int64_t i = 0; i < model->unitCount(); ++i) {
        const std::shared_ptr<Unit> unit = model->unit(i);
        for (const auto& p : unit->named_parameters()) {
            const std::optional<ModelPart> part = unit->partOf(p.key());
            if (part == ModelPart::Vision || part == ModelPart::Merger) {
                ++frozen;
                EXPECT_FALSE(p.value().requires_grad()) << unit->kindName() << " " << p.key();
                EXPECT_FALSE(p.value().grad().defined()) << unit->kindName() << " " << p.key();
            } else {
                ++trained;
                EXPECT_TRUE(p.value().requires_grad()) << unit->kindName() << " " << p.key();
                ASSERT_TRUE(p.value().grad().defined()) << unit->kindName() << " " << p.key();
            }
        }
    }
    EXPECT_GT(frozen, 4 * dims.vision_layers);
    EXPECT_GT(trained, 2 * dims.layers);

    FinetuneSpec lora = defaults;
    lora.mode = FinetuneMode::Lora;
    auto adapted = buildModel(dims, 2);
    const AppliedFinetune applied = applyFinetune(*adapted, lora, 2);
    ASSERT_EQ(applied.adapted.size(), static_cast<size_t>(7 * dims.layers)); // q, k, v, o, gate, up, down
    for (const AdaptedLayer& a : applied.adapted)
        EXPECT_EQ(a.published.rfind("model.", 0), 0u) << a.published << ": only the language model's";
}

TEST(Finetune, ModulesToSaveTrainWholeBesideTheAdapters) {
    const ModelDims dims = dimsOf("gpt", "tiny");
    auto model = buildModel(dims, 5);
    FinetuneSpec f = loraSpec({"q"});
    f.modules_to_save = {"out"};
    const AppliedFinetune applied = applyFinetune(*model, f, 5);
    const std::string head = "units." + std::to_string(dims.layers + 1) + ".out.weight";
    ASSERT_EQ(applied.saved.size(), 1u);
    EXPECT_EQ(applied.saved.front().name, head);
    EXPECT_EQ(applied.saved.front().published, head);
    EXPECT_TRUE(trainableNames(*model).count(head));
}

TEST(Finetune, TargetsThatAdaptNothingAreNamedWithTheLinearsThereAre) {
    auto model = buildModel(dimsOf("gpt", "tiny"), 5);
    try {
        applyFinetune(*model, loraSpec({"q_proj"}), 5);
        FAIL() << "q_proj adapts no Linear of gpt";
    } catch (const std::invalid_argument& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("finetune.lora_targets names \"q_proj\""), std::string::npos) << what;
        EXPECT_NE(what.find("q, k, v, proj, fc1, fc2"), std::string::npos) << what;
    }
    // Targets only in frozen parts: the tower's qkv with the tower frozen, the language model frozen too.
    const ModelDims dims = dimsOf("qwen2_5_vl", "tiny");
    FinetuneSpec f;
    f.mode = FinetuneMode::Lora;
    f.lora_targets = {"qkv", "q_proj"};
    f.freeze_llm = true;
    auto vl = buildModel(dims, 5);
    try {
        applyFinetune(*vl, f, 5);
        FAIL() << "nothing would train";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("name only Linears of frozen parts"), std::string::npos) << e.what();
    }
}

TEST(Finetune, RsloraScalesByTheSquareRootOfTheRank) {
    FinetuneSpec f = loraSpec({"q"}, 16, 8);
    EXPECT_DOUBLE_EQ(loraScale(f), 0.5);
    f.rslora = true;
    EXPECT_DOUBLE_EQ(loraScale(f), 2.0);
}

// The optimizer state and gradient buffers a layout builds (GradBuckets, AdamW as OptimizerSetup
// adds them), after one step: their sizes in values.
struct Footprint {
    int64_t gradients = 0;
    int64_t optimizerState = 0;
};

Footprint trainOneStep(Model& model, const ModelDims& dims) {
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& p : model.named_parameters()) named.emplace_back(p.key(), p.value());
    GradBuckets buckets(named, BucketOptions{});
    AdamW adam(AdamWOptions{});
    for (Bucket& b : buckets.buckets()) adam.addGroup(b.params, b.grads, b.decay);
    const Activation out = model.forwardAll(batchOf(dims, 2));
    (out[0] / out[1]).backward();
    adam.step(1e-3);
    Footprint f;
    for (const Bucket& b : buckets.buckets()) f.gradients += b.grads.numel();
    for (const AdamW::Group& g : adam.groups()) f.optimizerState += g.exp_avg.numel() + g.exp_avg_sq.numel();
    for (const auto& p : model.parameters())
        if (!p.requires_grad()) EXPECT_FALSE(p.grad().defined());
    return f;
}

TEST(Finetune, FrozenParametersHoldNoGradientAndNoOptimizerState) {
    const ModelDims dims = dimsOf("gpt", "tiny");
    auto full = buildModel(dims, 5);
    int64_t all = 0;
    for (const auto& p : full->parameters()) all += p.numel();
    const Footprint fullRun = trainOneStep(*full, dims);
    EXPECT_EQ(fullRun.gradients, all);
    EXPECT_EQ(fullRun.optimizerState, 2 * all);

    auto lora = buildModel(dims, 5);
    const AppliedFinetune applied = applyFinetune(*lora, loraSpec({"q", "k", "v", "proj", "fc1", "fc2"}), 5);
    const Footprint loraRun = trainOneStep(*lora, dims);
    EXPECT_EQ(loraRun.gradients, applied.trainable);
    EXPECT_EQ(loraRun.optimizerState, 2 * applied.trainable);
    EXPECT_LT(loraRun.optimizerState * 10, fullRun.optimizerState);
    std::cout << "gpt tiny optimizer state: full " << fullRun.optimizerState * 4 << " bytes, LoRA r 4 "
              << loraRun.optimizerState * 4 << " bytes (" << applied.trainable << " of " << all
              << " parameter values train)\n";
}

TEST(Finetune, RecomputedBlocksDrawTheDropoutMasksTheirForwardDrew) {
    const ModelDims dims = dimsOf("gpt", "tiny");
    const Batch batch = batchOf(dims, 2);
    std::map<std::string, torch::Tensor> grads[2];
    for (int recompute = 0; recompute < 2; ++recompute) {
        auto model = buildModel(dims, 5);
        FinetuneSpec f = loraSpec({"q", "fc1"});
        f.lora_dropout = 0.5;
        applyFinetune(*model, f, 5);
        for (const auto& p : model->named_parameters())
            if (p.key().find("lora_B") != std::string::npos) p.value().data().fill_(0.05);
        StageChunk chunk;
        for (int64_t i = 0; i < model->unitCount(); ++i) chunk.units.push_back(model->unit(i));
        std::vector<StageChunk> chunks{chunk};
        if (recompute) checkpointBlocks(chunks);
        // The embedding is frozen, so a block's input needs no gradient and would run without
        // recomputation: a leaf that does makes every block recompute.
        torch::manual_seed(11);
        Activation a = chunks[0].units[0]->forward({}, batch);
        a[0] = a[0].detach().requires_grad_(true);
        for (size_t u = 1; u < chunks[0].units.size(); ++u) a = chunks[0].units[u]->forward(a, batch);
        (a[0] / a[1]).backward();
        for (const auto& p : model->named_parameters())
            if (p.value().requires_grad()) grads[recompute][p.key()] = p.value().grad().clone();
    }
    ASSERT_FALSE(grads[0].empty());
    for (const auto& [name, g] : grads[0]) EXPECT_TRUE(torch::allclose(g, grads[1][name], 1e-5, 1e-6)) << name;
}

} // namespace
} // namespace parallax
