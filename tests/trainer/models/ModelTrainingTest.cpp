#include "tests/trainer/models/ModelTestSupport.h"
#include "trainer/models/PublishedNames.h"

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace parallax {
namespace {

using test::batchOf;
using test::dimsOf;
using test::meanLoss;

class ModelTraining : public testing::TestWithParam<std::string> {};

// SGD with momentum on one fixed batch; returns the losses before each step.
std::vector<double> sgd(Model& model, const Batch& batch, int steps, double lr) {
    torch::optim::SGD opt(model.parameters(), torch::optim::SGDOptions(lr).momentum(0.9));
    std::vector<double> losses;
    for (int i = 0; i < steps; ++i) {
        opt.zero_grad();
        const Activation out = model.forwardAll(batch);
        torch::Tensor loss = out[0] / out[1];
        losses.push_back(loss.item<double>());
        loss.backward();
        opt.step();
    }
    return losses;
}

TEST_P(ModelTraining, SgdStepsOnOneBatchLowerTheLoss) {
    const ModelDims dims = dimsOf(GetParam(), "tiny");
    auto model = buildModel(dims, 11);
    const Batch batch = batchOf(dims, 4);
    const std::vector<double> losses = sgd(*model, batch, 20, 0.02);
    for (double l : losses) ASSERT_TRUE(std::isfinite(l));
    EXPECT_LT(losses.back(), 0.85 * losses.front()) << "from " << losses.front() << " to " << losses.back();
}

TEST_P(ModelTraining, GradientsReachEveryTrainableParameter) {
    const ModelDims dims = dimsOf(GetParam(), "tiny");
    auto model = buildModel(dims, 12);
    const Batch batch = batchOf(dims, 4);
    // A few steps first, so that no gradient is zero only because a weight still holds its
    // initial value.
    sgd(*model, batch, 3, 0.02);
    model->zero_grad();
    const Activation out = model->forwardAll(batch);
    (out[0] / out[1]).backward();
    // Every parameter gets a gradient, but for those of qwen_image's last block that nothing reads:
    // its text stream's queries, output projection and MLP (as diffusers' model has them).
    const std::string last = "transformer_blocks." + std::to_string(dims.layers - 1) + ".";
    const auto unread = [&](const std::string& name) {
        // The VAE's time convolutions, which a still image never runs.
        if (dims.kind == ModelKind::QwenImageVae) return name.find(".time_conv.") != std::string::npos;
        if (dims.kind != ModelKind::QwenImage || name.rfind(last, 0) != 0) return false;
        for (const char* part : {"attn.add_q_proj.", "attn.norm_added_q.", "attn.to_add_out.", "txt_mlp."})
            if (name.find(part) != std::string::npos) return true;
        return false;
    };
    std::vector<std::pair<std::string, torch::Tensor>> named;
    if (dims.kind == ModelKind::QwenImage) named = publishedParameters(*model); // diffusers' names
    else
        for (const auto& item : model->named_parameters()) named.emplace_back(item.key(), item.value());
    int64_t without = 0;
    for (const auto& [name, parameter] : named) {
        const torch::Tensor& grad = parameter.grad();
        if (unread(name)) {
            EXPECT_FALSE(grad.defined()) << name;
            ++without;
            continue;
        }
        ASSERT_TRUE(grad.defined()) << name;
        EXPECT_TRUE(torch::isfinite(grad).all().item<bool>()) << name;
        EXPECT_GT(grad.abs().max().item<double>(), 0.0) << name;
    }
    // qwen_image: 4 weights, 4 biases, a norm; the VAE: two time convolutions each way, weight and bias.
    EXPECT_EQ(without, dims.kind == ModelKind::QwenImage ? 9 : dims.kind == ModelKind::QwenImageVae ? 8 : 0);
}

TEST_P(ModelTraining, Bfloat16ModelRunsForwardAndBackwardOnCpu) {
    const ModelDims dims = dimsOf(GetParam(), "tiny");
    auto model = buildModel(dims, 13);
    const Batch batch = batchOf(dims, 2);
    double reference = 0;
    {
        torch::NoGradGuard noGrad;
        reference = meanLoss(model->forwardAll(batch));
    }
    model->to(torch::kBFloat16);
    const Activation out = model->forwardAll(batch);
    EXPECT_EQ(out[0].scalar_type(), torch::kFloat32);
    EXPECT_NEAR(meanLoss(out), reference, 0.02 * reference);
    (out[0] / out[1]).backward();
    // The first block's (the VAE's one unit's).
    const torch::Tensor grad = model->unit(std::min<int64_t>(1, model->unitCount() - 1))->parameters().front().grad();
    ASSERT_TRUE(grad.defined());
    EXPECT_EQ(grad.scalar_type(), torch::kBFloat16);
}

TEST_P(ModelTraining, Bfloat16AutocastRunsWithFloat32Weights) {
    const ModelDims dims = dimsOf(GetParam(), "tiny");
    auto model = buildModel(dims, 14);
    const Batch batch = batchOf(dims, 2);
    double reference = 0;
    {
        torch::NoGradGuard noGrad;
        reference = meanLoss(model->forwardAll(batch));
    }
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
    Activation out;
    try {
        out = model->forwardAll(batch);
    } catch (...) {
        at::autocast::set_cpu_enabled(false);
        throw;
    }
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    EXPECT_EQ(out[0].scalar_type(), torch::kFloat32);
    EXPECT_NEAR(meanLoss(out), reference, 0.02 * reference);
    (out[0] / out[1]).backward();
    for (const auto& p : model->parameters()) EXPECT_EQ(p.scalar_type(), torch::kFloat32);
}

TEST_P(ModelTraining, RunsOnCudaWhenPresent) {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device in this LibTorch build or machine";
    const ModelDims dims = dimsOf(GetParam(), "tiny");
    auto model = buildModel(dims, 15);
    const Batch batch = batchOf(dims, 2);
    double reference = 0;
    {
        torch::NoGradGuard noGrad;
        reference = meanLoss(model->forwardAll(batch));
    }
    const torch::Device cuda(torch::kCUDA, 0);
    model->to(cuda);
    const Activation out = model->forwardAll(batch.to(cuda));
    EXPECT_TRUE(out[0].is_cuda());
    EXPECT_NEAR(meanLoss(out), reference, 1e-3 * reference);
    (out[0] / out[1]).backward();
}

INSTANTIATE_TEST_SUITE_P(Kinds, ModelTraining, testing::Values("gpt", "qwen_image", "qwen_image_vae"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

} // namespace
} // namespace parallax
