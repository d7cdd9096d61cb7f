#include "tests/trainer/models/ModelTestSupport.h"
#include "core/spec/Estimates.h"
#include "core/spec/ModelKinds.h"
#include "trainer/models/Linear.h"
#include "trainer/models/TransformerBlock.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <tuple>

namespace parallax {
namespace {

using test::batchOf;
using test::dimsOf;

struct KindPreset {
    std::string kind;
    std::string preset;
};

std::string caseName(const testing::TestParamInfo<KindPreset>& info) {
    return info.param.kind + "_" + info.param.preset;
}

class ModelStructure : public testing::TestWithParam<KindPreset> {};

// The table of model kinds (core/spec/ModelKinds, each kind's units) and the model the trainer
// builds agree on every preset: the parameters of the whole model and of each unit (the memory
// estimate, the pipeline split and MFU read the table's units; the trainer's MFU reads its FLOPs).
TEST(ModelStructure, EveryPresetHoldsTheParametersTheEstimatesCount) {
    for (const ModelKindInfo& info : modelKinds()) {
        if (!info.trains) continue; // the worker has no model of it yet: nothing to compare
        const ModelKind kind = info.kind;
        for (const std::string& preset : modelPresets(kind)) {
            const ModelDims dims = dimsOf(kind, preset);
            auto model = constructModel(dims); // shapes only: drawing the 1b presets' values takes minutes
            int64_t held = 0, tiedCopies = 0; // a tied head's copy is held but not counted in the size
            for (const auto& p : model->parameters()) held += p.numel();
            if (publishedModel(info))
                for (const ModelTensor& t : info.tensors(dims)) tiedCopies += t.tiedCopy() ? t.elements() : 0;
            EXPECT_EQ(tiedCopies > 0, dims.tie_embeddings) << choiceName(kind) << " " << preset;
            EXPECT_EQ(held, parameterCount(dims) + tiedCopies) << choiceName(kind) << " " << preset;
            const std::vector<UnitEstimate> units = modelKindInfo(kind).units(dims);
            ASSERT_EQ(model->unitCount(), static_cast<int64_t>(units.size())) << choiceName(kind) << " " << preset;
            for (int64_t u = 0; u < model->unitCount(); ++u) {
                int64_t unitHeld = 0;
                for (const auto& p : model->unit(u)->parameters()) unitHeld += p.numel();
                EXPECT_EQ(unitHeld, units[static_cast<size_t>(u)].params())
                    << choiceName(kind) << " " << preset << " unit " << u << " (" << model->unit(u)->kindName() << ")";
                EXPECT_EQ(units[static_cast<size_t>(u)].block, model->unit(u)->kindName().find("block") != std::string::npos)
                    << choiceName(kind) << " " << preset << " unit " << u;
            }
        }
    }
}

TEST_P(ModelStructure, SameSeedGivesIdenticalWeightsAndAnotherSeedOthers) {
    const ModelDims dims = dimsOf(GetParam().kind, GetParam().preset);
    auto a = buildModel(dims, 42);
    auto b = buildModel(dims, 42);
    auto c = buildModel(dims, 43);
    auto pa = a->named_parameters(), pb = b->named_parameters(), pc = c->named_parameters();
    ASSERT_EQ(pa.size(), pb.size());
    int64_t differing = 0, random = 0;
    for (const auto& item : pa) {
        const torch::Tensor& x = item.value();
        EXPECT_TRUE(torch::equal(x, pb[item.key()])) << item.key();
        // Parameters drawn at random (not constant ones like LayerNorm or adaLN-Zero) must differ.
        if (x.numel() > 1 && x.std().item<double>() > 0) {
            ++random;
            if (!torch::equal(x, pc[item.key()])) ++differing;
        }
    }
    EXPECT_GT(random, 0);
    EXPECT_EQ(differing, random);
}

TEST_P(ModelStructure, EveryUnitProducesTheDocumentedShapes) {
    const ModelDims dims = dimsOf(GetParam().kind, GetParam().preset);
    auto model = buildModel(dims, 1);
    const int64_t b = 2, t = dims.seq_len, p = dims.imageTokens(), c = dims.dim;
    const Batch batch = batchOf(dims, b);
    Activation a;
    for (const auto& unit : model->units()) {
        a = unit->forward(a, batch);
        const std::string kind = unit->kindName();
        SCOPED_TRACE(kind);
        if (kind == "head") {
            ASSERT_EQ(a.size(), 2u);
            EXPECT_EQ(a[0].dim(), 0);
            EXPECT_EQ(a[1].dim(), 0);
            EXPECT_EQ(a[0].scalar_type(), torch::kFloat32);
            EXPECT_EQ(a[1].scalar_type(), torch::kFloat32);
        } else if (dims.kind == ModelKind::Gpt) {
            ASSERT_EQ(a.size(), 1u);
            EXPECT_EQ(a[0].sizes(), torch::IntArrayRef({b, t, c}));
        } else if (dims.kind == ModelKind::QwenImage) {
            // text (the batch's prompt width), image tokens, timestep embedding
            ASSERT_EQ(a.size(), 3u);
            EXPECT_EQ(a[0].sizes(), torch::IntArrayRef({b, batch.text_states.size(1), c}));
            EXPECT_EQ(a[1].sizes(), torch::IntArrayRef({b, p, c}));
            EXPECT_EQ(a[2].sizes(), torch::IntArrayRef({b, c}));
        } else {
            FAIL() << "a kind without expected shapes";
        }
    }
}

TEST_P(ModelStructure, InitialLossIsTheUntrainedValue) {
    const ModelDims dims = dimsOf(GetParam().kind, GetParam().preset);
    auto model = buildModel(dims, 3);
    const int64_t b = 2;
    const Batch batch = batchOf(dims, b);
    torch::NoGradGuard noGrad;
    const Activation out = model->forwardAll(batch);
    ASSERT_TRUE(std::isfinite(out[0].item<double>()));
    if (dims.kind == ModelKind::Gpt) {
        EXPECT_EQ(out[1].item<double>(), static_cast<double>(b * dims.seq_len));
        EXPECT_NEAR(test::meanLoss(out), std::log(static_cast<double>(dims.vocab)), 0.1);
    } else {
        EXPECT_EQ(out[1].item<double>(), static_cast<double>(batch.images.numel()));
        const double expected = (batch.noise - batch.images).pow(2).mean().item<double>();
        // qwen_image's small initial weights predict a small velocity, so the loss is nearly
        // E[(e - x0)^2] (1.3% off here).
        EXPECT_NEAR(test::meanLoss(out), expected, 0.03 * expected);
    }
}

INSTANTIATE_TEST_SUITE_P(Presets, ModelStructure,
                         testing::Values(KindPreset{"gpt", "tiny"}, KindPreset{"gpt", "small"},
                                         KindPreset{"qwen_image", "tiny"}),
                         caseName);

// A published kind's model holds exactly the tensors its table declares (what checkpoints are checked
// and loaded against, and what the estimates count): the same published names, shapes, units and
// parts.
TEST(ModelStructure, PublishedKindsHoldTheTensorsTheirTablesDeclare) {
    ModelDims qwen2 = dimsOf(ModelKind::Qwen2, "tiny"), tied = qwen2;
    qwen2.tie_embeddings = false;
    tied.tie_embeddings = true; // lm_head: the head's copy of embed_tokens, declared as such
    for (const ModelDims& dims : {dimsOf(ModelKind::Qwen2_5_Vl, "tiny"), qwen2, tied}) {
        SCOPED_TRACE(choiceName(dims.kind));
        const std::shared_ptr<Model> model = constructModel(dims);
        const std::vector<ModelTensor> declared = modelKindInfo(dims.kind).tensors(dims);
        std::vector<std::tuple<std::string, std::vector<int64_t>, int, std::optional<ModelPart>>> held;
        for (int64_t u = 0; u < model->unitCount(); ++u)
            for (const auto& item : model->unit(u)->named_parameters())
                held.emplace_back(model->unit(u)->publishedName(item.key()), item.value().sizes().vec(), int(u),
                                  model->unit(u)->partOf(item.key()));
        ASSERT_EQ(held.size(), declared.size());
        std::map<std::string, size_t> at;
        for (size_t i = 0; i < held.size(); ++i) at[std::get<0>(held[i])] = i;
        for (const ModelTensor& t : declared) {
            ASSERT_TRUE(at.count(t.name)) << t.name << " is declared but the model has no such parameter";
            const auto& [name, shape, unit, part] = held[at[t.name]];
            EXPECT_EQ(shape, t.shape) << name;
            EXPECT_EQ(unit, t.unit) << name;
            EXPECT_EQ(part, std::optional<ModelPart>(t.part)) << name;
        }
        // The table's tied copy is the model's: its lm_head ties to embed_tokens.
        ASSERT_EQ(model->ties().size(), dims.tie_embeddings ? 1u : 0u);
        for (const Model::Tie& t : model->ties()) {
            EXPECT_NE(t.source.find(".embed_tokens.weight"), std::string::npos) << t.source;
            EXPECT_NE(t.copy.find(".lm_head.weight"), std::string::npos) << t.copy;
        }
    }
}

TEST(ModelStructure, ParameterNamesAreStableAndNameTheParallelLayers) {
    auto gpt = buildModel(dimsOf("gpt", "tiny"), 1);
    const auto names = gpt->named_parameters();
    for (const char* name : {"units.0.tok.weight", "units.0.pos", "units.1.ln1.weight", "units.1.q.weight",
                             "units.1.k.bias", "units.1.v.weight", "units.1.proj.weight", "units.2.fc1.weight",
                             "units.2.fc2.bias", "units.3.ln.weight", "units.3.out.weight"})
        EXPECT_NE(names.find(name), nullptr) << name;
    EXPECT_EQ(names.find("units.3.out.bias"), nullptr); // the LM head has no bias
}

TEST(ModelStructure, InitializationFollowsTheDocumentedDistributions) {
    const ModelDims dims = dimsOf("gpt", "small");
    auto model = buildModel(dims, 5);
    const auto p = model->named_parameters();
    // Products 0.02; the two that add to the residual stream scaled by 1 / sqrt(2 L); biases zero.
    const double residual = 0.02 / std::sqrt(2.0 * dims.layers);
    EXPECT_NEAR(p["units.1.q.weight"].std().item<double>(), 0.02, 0.001);
    EXPECT_NEAR(p["units.1.fc2.weight"].std().item<double>(), residual, 0.1 * residual);
    EXPECT_NEAR(p["units.1.proj.weight"].std().item<double>(), residual, 0.1 * residual);
    EXPECT_NEAR(p["units.0.tok.weight"].std().item<double>(), 0.02, 0.001);
    for (const char* zero : {"units.1.q.bias", "units.1.fc2.bias", "units.3.proj.bias"})
        EXPECT_EQ(p[zero].abs().max().item<double>(), 0.0) << zero;
    auto gpt = buildModel(dimsOf("gpt", "tiny"), 5);
    const auto g = gpt->named_parameters();
    EXPECT_TRUE(torch::equal(g["units.1.ln1.weight"], torch::ones({64})));
    EXPECT_TRUE(torch::equal(g["units.1.ln2.bias"], torch::zeros({64})));
}

// A unit that wraps another, as activation checkpointing and tensor parallelism do.
class Wrapper : public Unit {
public:
    explicit Wrapper(std::shared_ptr<Unit> inner) : m_inner(register_module("inner", std::move(inner))) {}
    Activation forward(const Activation& in, const Batch& batch) override {
        ++calls;
        return m_inner->forward(in, batch);
    }
    std::string kindName() const override { return m_inner->kindName(); }
    int calls = 0;

private:
    std::shared_ptr<Unit> m_inner;
};

TEST(ModelStructure, ReplacedUnitsRunInPlaceOfTheOriginal) {
    const ModelDims dims = dimsOf("gpt", "tiny");
    auto model = buildModel(dims, 1);
    const Batch batch = batchOf(dims, 2);
    torch::NoGradGuard noGrad;
    const double before = model->forwardAll(batch)[0].item<double>();
    auto wrapper = std::make_shared<Wrapper>(model->unit(1));
    model->replaceUnit(1, wrapper);
    EXPECT_EQ(model->unit(1), wrapper);
    EXPECT_EQ(model->forwardAll(batch)[0].item<double>(), before);
    EXPECT_EQ(wrapper->calls, 1);
    EXPECT_NE(model->named_parameters().find("units.1.inner.q.weight"), nullptr);
    EXPECT_EQ(model->named_parameters().find("units.1.q.weight"), nullptr);
    EXPECT_THROW(model->replaceUnit(9, wrapper), std::out_of_range);
}

TEST(ModelStructure, LinearTransformsWrapTheProductBeforeTheBias) {
    Linear linear(3, 2, true, 0.02);
    torch::NoGradGuard noGrad;
    linear.weight.copy_(torch::tensor({{1.0f, 2.0f, 3.0f}, {0.0f, 1.0f, 0.0f}}));
    linear.bias.copy_(torch::tensor({10.0f, 20.0f}));
    const torch::Tensor x = torch::tensor({{1.0f, 1.0f, 1.0f}});
    EXPECT_TRUE(torch::equal(linear.forward(x), torch::tensor({{16.0f, 21.0f}})));
    linear.output_transform = [](const torch::Tensor& y) { return y * 2; };
    EXPECT_TRUE(torch::equal(linear.forward(x), torch::tensor({{22.0f, 22.0f}})));
    linear.input_transform = [](const torch::Tensor& in) { return in * 0; };
    EXPECT_TRUE(torch::equal(linear.forward(x), torch::tensor({{10.0f, 20.0f}})));
}

TEST(ModelStructure, UnknownKindsAndIndivisibleHeadsAreRejected) {
    ModelDims dims = dimsOf("gpt", "tiny");
    dims.heads = 5;
    try {
        buildModel(dims, 1);
        FAIL() << "indivisible heads accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("model.dim = 64 is not divisible by model.heads = 5"), std::string::npos);
    }
    dims = dimsOf("gpt", "tiny");
    dims.kind = static_cast<ModelKind>(99); // a value outside the enum
    EXPECT_THROW(buildModel(dims, 1), std::invalid_argument);
}

TEST(ModelStructure, BatchMovesEveryDefinedTensor) {
    const Batch batch = batchOf(dimsOf("qwen_image", "tiny"), 2);
    const Batch moved = batch.to(torch::Device(torch::kCPU));
    EXPECT_TRUE(torch::equal(moved.noise, batch.noise));
    EXPECT_TRUE(torch::equal(moved.text_states, batch.text_states));
    EXPECT_TRUE(torch::equal(moved.timesteps, batch.timesteps));
    EXPECT_FALSE(moved.labels.defined());
    EXPECT_EQ(moved.sample_index, batch.sample_index);
    EXPECT_EQ(moved.size(), 2);
}

// Blocks that hand their residual on to the next block: flags only between blocks of one kind
// that follow each other in a chunk, and the same loss and gradients as blocks that add it
// themselves (the same float32 sum, moved into the next block's first LayerNorm).
TEST(ModelStructure, HandingTheResidualOnChangesNothing) {
    for (const std::string kind : {"gpt"}) {
        SCOPED_TRACE(kind);
        const ModelDims dims = dimsOf(kind, "tiny");
        auto plain = buildModel(dims, 5);
        auto handing = buildModel(dims, 5);
        deferResidualsWithin(handing->units());
        int handed = 0, blocks = 0;
        for (int64_t i = 0; i < handing->unitCount(); ++i) {
            auto* block = dynamic_cast<TransformerBlock*>(handing->unit(i).get());
            if (!block) continue;
            ++blocks;
            const auto* next =
                i + 1 < handing->unitCount() ? dynamic_cast<TransformerBlock*>(handing->unit(i + 1).get()) : nullptr;
            EXPECT_EQ(block->handsOnResidual(), next != nullptr && next->kindName() == block->kindName()) << "unit " << i;
            handed += block->handsOnResidual() ? 1 : 0;
        }
        // gpt tiny: every block but the last.
        EXPECT_EQ(handed, dims.layers - 1);
        EXPECT_GT(blocks, handed);

        // A chunk boundary inside the tower: the block before it returns its sum.
        std::vector<std::shared_ptr<Unit>> firstChunk;
        for (int64_t i = 0; i < 2; ++i) firstChunk.push_back(handing->unit(i));
        auto* split = dynamic_cast<TransformerBlock*>(firstChunk.back().get());
        if (split) {
            deferResidualsWithin(firstChunk);
            EXPECT_FALSE(split->handsOnResidual());
            EXPECT_EQ(split->forward(firstChunk.front()->forward({}, batchOf(dims, 2)), batchOf(dims, 2)).size(), 1);
            deferResidualsWithin(handing->units());
        }

        const Batch batch = batchOf(dims, 3);
        const Activation a = plain->forwardAll(batch), b = handing->forwardAll(batch);
        EXPECT_TRUE(torch::allclose(a.at(0), b.at(0), 1e-6, 1e-6)) << a.at(0).item<double>() << " vs " << b.at(0).item<double>();
        a.at(0).backward();
        b.at(0).backward();
        auto pa = plain->named_parameters(), pb = handing->named_parameters();
        for (const auto& item : pa) {
            ASSERT_TRUE(item.value().grad().defined()) << item.key();
            EXPECT_TRUE(torch::allclose(item.value().grad(), pb[item.key()].grad(), 1e-5, 1e-6)) << item.key();
        }
    }
}

} // namespace
} // namespace parallax
