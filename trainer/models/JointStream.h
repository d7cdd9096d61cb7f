#pragma once

#include "trainer/models/Layers.h"
#include "trainer/models/Linear.h"

#include <cmath>

namespace parallax {

// The weights one stream (text or image) owns in an mmdit joint block (docs/models.md): the adaLN
// modulation and the attention and MLP projections. JointBlock runs them.
//
// `contextOnly`: the text stream of the last block, whose output nothing reads, only provides keys
// and values to the image stream's attention: modulation Linear(C, 2C) (shift1, scale1), k and v;
// no q, proj or MLP (as SD3's last block), so no parameter is left without a gradient.
class JointStream : public torch::nn::Module {
public:
    JointStream(int64_t dim, int64_t ffn, int64_t depth, bool contextOnly = false) : context_only(contextOnly) {
        const double residualStd = kInitStd / std::sqrt(2.0 * static_cast<double>(depth));
        mod = register_module("mod", std::make_shared<Linear>(dim, (contextOnly ? 2 : 6) * dim, true, 0.0)); // adaLN-Zero
        if (!contextOnly) q = register_module("q", std::make_shared<Linear>(dim, dim, true, kInitStd));
        k = register_module("k", std::make_shared<Linear>(dim, dim, true, kInitStd));
        v = register_module("v", std::make_shared<Linear>(dim, dim, true, kInitStd));
        for (Linear* l : {q.get(), k.get(), v.get()})
            if (l) l->split = TensorSplit::Column;
        // LoRA may adapt every Linear of a stream, the modulation included (as DiffSynth's defaults do).
        mod->lora_name = "mod";
        if (q) q->lora_name = "q";
        k->lora_name = "k";
        v->lora_name = "v";
        if (contextOnly) return;
        proj = register_module("proj", std::make_shared<Linear>(dim, dim, true, residualStd));
        fc1 = register_module("fc1", std::make_shared<Linear>(dim, ffn, true, kInitStd));
        fc2 = register_module("fc2", std::make_shared<Linear>(ffn, dim, true, residualStd));
        fc1->split = TensorSplit::Column;
        for (Linear* l : {proj.get(), fc2.get()}) l->split = TensorSplit::Row;
        proj->lora_name = "proj";
        fc1->lora_name = "fc1";
        fc2->lora_name = "fc2";
    }

    bool context_only;
    std::shared_ptr<Linear> mod, q, k, v, proj, fc1, fc2;
};

} // namespace parallax
