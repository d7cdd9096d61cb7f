#pragma once

// The Qwen kinds' comparison with recorded outputs (tests/reference, transformers' golden files).

#include "core/formats/SafetensorsFile.h"
#include "core/spec/ModelTensors.h"
#include "tests/trainer/support/ReferencePython.h"
#include "trainer/models/Model.h"
#include "trainer/models/PublishedNames.h"
#include "trainer/models/QwenText.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace parallax::testing {

// `model`'s loss, logits (of the real positions) and the gradients of `gradNames` on `batch`
// against those `out` holds ("loss", "logits", "grad.NAME"): 1e-5 for the loss and logits, 1e-4
// relative for the gradients. `gradNames` are the model's published names; `out` names them in `layout`.
inline void expectEqualToReference(Model& model, const Batch& batch, const SafetensorsFile& out,
                                   const std::vector<std::string>& gradNames, WeightLayout layout = WeightLayout::Flat) {
    const Activation result = model.forwardAll(batch);
    const torch::Tensor loss = result.at(0) / result.at(1);
    loss.backward();
    auto& head = dynamic_cast<QwenHead&>(*model.unit(model.unitCount() - 1));
    torch::Tensor x;
    {
        torch::NoGradGuard noGrad;
        Activation a;
        for (int64_t i = 0; i + 1 < model.unitCount(); ++i) a = model.unit(i)->forward(a, batch);
        x = a.at(0);
    }
    const torch::Tensor logits = head.lm_head->forward(head.norm->forward(x)).detach(); // (B, T, V)

    EXPECT_NEAR(loss.item<double>(), readFloatTensor(out, "loss").item<double>(), 1e-5);
    // The real positions' logits (a padded query's row depends on how padding is masked).
    const torch::Tensor want = readFloatTensor(out, "logits");
    const torch::Tensor real = batch.attention_mask.defined() ? batch.attention_mask.unsqueeze(-1).expand_as(logits)
                                                              : torch::ones_like(logits, torch::kBool);
    EXPECT_LT(relativeError(logits.masked_select(real), want.masked_select(real)), 1e-5);
    std::map<std::string, torch::Tensor> mine;
    for (const auto& [name, tensor] : publishedParameters(model)) mine[name] = tensor.grad();
    // A tied weight's gradient is its two places' together, as the trainer adds them (TiedParameters).
    const auto params = model.named_parameters();
    for (const Model::Tie& t : model.ties())
        for (auto& [name, grad] : mine)
            if (grad.defined() && grad.is_same(params[t.source].grad())) grad = grad + params[t.copy].grad();
    for (const std::string& n : gradNames) {
        ASSERT_TRUE(mine.count(n)) << n << " is no parameter of the model";
        ASSERT_TRUE(mine.at(n).defined()) << n;
        EXPECT_LT(relativeError(mine.at(n), readFloatTensor(out, "grad." + layoutName(n, layout))), 1e-4) << n;
    }
}

} // namespace parallax::testing
