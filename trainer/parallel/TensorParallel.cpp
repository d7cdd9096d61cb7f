#include "trainer/parallel/TensorParallel.h"

#include "trainer/models/Embedding.h"
#include "trainer/models/Linear.h"
#include "trainer/models/RmsNorm.h"
#include "trainer/models/VocabHead.h"

#include <stdexcept>

namespace parallax {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

Communicator* commOf(AutogradContext* ctx) {
    return reinterpret_cast<Communicator*>(ctx->saved_data["comm"].toInt());
}

int64_t commId(Communicator& c) {
    return static_cast<int64_t>(reinterpret_cast<intptr_t>(&c));
}

torch::Tensor reducedCopy(const torch::Tensor& t, Communicator& comm) {
    torch::Tensor out = t.is_contiguous() ? t.clone() : t.contiguous();
    comm.allReduce(out, ReduceOp::Sum);
    return out;
}

// f: identity forward, all-reduce of the gradient backward.
struct CopyToGroup : public torch::autograd::Function<CopyToGroup> {
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, int64_t comm) {
        ctx->saved_data["comm"] = comm;
        return x;
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        return {reducedCopy(grads[0], *commOf(ctx)), torch::Tensor()};
    }
};

// g: all-reduce forward, identity backward.
struct ReduceFromGroup : public torch::autograd::Function<ReduceFromGroup> {
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, int64_t comm) {
        return reducedCopy(x, *reinterpret_cast<Communicator*>(comm));
    }
    static variable_list backward(AutogradContext*, variable_list grads) {
        return {grads[0], torch::Tensor()};
    }
};

// Loss summed over rows; each rank holds a contiguous slice of the vocabulary.
struct VocabParallelCrossEntropy : public torch::autograd::Function<VocabParallelCrossEntropy> {
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& logitsIn, const torch::Tensor& labels,
                                 int64_t vocabStart, int64_t comm) {
        Communicator& tp = *reinterpret_cast<Communicator*>(comm);
        torch::Tensor logits = logitsIn.to(torch::kFloat); // (N, Vl)
        const int64_t local = logits.size(1);
        torch::Tensor max = std::get<0>(logits.max(1)).contiguous(); // (N)
        tp.allReduce(max, ReduceOp::Max);
        torch::Tensor shifted = logits - max.unsqueeze(1);
        torch::Tensor exp = shifted.exp();
        torch::Tensor sum = exp.sum(1).contiguous(); // (N)
        tp.allReduce(sum, ReduceOp::Sum);
        torch::Tensor valid = labels.ge(0);
        torch::Tensor inRange = valid & labels.ge(vocabStart) & labels.lt(vocabStart + local);
        torch::Tensor localIndex = (labels - vocabStart).clamp(0, local - 1).masked_fill(inRange.logical_not(), 0);
        torch::Tensor target = shifted.gather(1, localIndex.unsqueeze(1)).squeeze(1) * inRange.to(torch::kFloat);
        target = target.contiguous();
        tp.allReduce(target, ReduceOp::Sum);
        torch::Tensor perRow = (sum.log() - target) * valid.to(torch::kFloat);
        ctx->save_for_backward({exp / sum.unsqueeze(1), inRange, localIndex, valid});
        ctx->saved_data["dtype"] = static_cast<int64_t>(logitsIn.scalar_type());
        return perRow.sum();
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        auto saved = ctx->get_saved_variables();
        torch::Tensor grad = saved[0].clone(); // softmax (N, Vl)
        const torch::Tensor& inRange = saved[1];
        const torch::Tensor& localIndex = saved[2];
        const torch::Tensor& valid = saved[3];
        grad.scatter_add_(1, localIndex.unsqueeze(1), -inRange.to(torch::kFloat).unsqueeze(1));
        grad.mul_(valid.to(torch::kFloat).unsqueeze(1)).mul_(grads[0]);
        const auto dtype = static_cast<c10::ScalarType>(ctx->saved_data["dtype"].toInt());
        return {grad.to(dtype), torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};

class PlanBuilder {
public:
    PlanBuilder(std::shared_ptr<Communicator> tp, TensorParallelPlan& plan)
        : m_tp(std::move(tp)), m_plan(plan), m_rank(m_tp->rank()), m_size(m_tp->size()) {}

    void shard(torch::Tensor& param, const std::string& name, int dim) {
        const int64_t full = param.size(dim);
        if (full % m_size != 0)
            throw std::invalid_argument(name + " has " + std::to_string(full) + " entries along dimension " +
                                        std::to_string(dim) + ", not divisible by parallel.tp = " +
                                        std::to_string(m_size));
        const int64_t length = full / m_size;
        TensorShard s{param.sizes().vec(), dim, m_rank * length, length};
        torch::NoGradGuard noGrad;
        param.set_data(param.narrow(dim, s.start, length).clone());
        m_plan[name] = s;
    }

    void column(Linear& l, const std::string& prefix) {
        shard(l.weight, prefix + "weight", 0);
        if (l.bias.defined()) shard(l.bias, prefix + "bias", 0);
        // LoRA's B by rows with the layer's outputs; A stays whole (LoraAdapter.h).
        if (l.adapter) shard(l.adapter->B->weight, prefix + "lora_B.weight", 0);
        l.out_features /= m_size;
        Communicator* comm = m_tp.get();
        l.input_transform = [comm](const torch::Tensor& x) { return copyToTensorParallel(x, *comm); };
    }

    void row(Linear& l, const std::string& prefix) {
        shard(l.weight, prefix + "weight", 1);
        // LoRA's A by columns with the layer's inputs; B stays whole (LoraAdapter.h).
        if (l.adapter) shard(l.adapter->A->weight, prefix + "lora_A.weight", 1);
        l.in_features /= m_size;
        Communicator* comm = m_tp.get();
        l.output_transform = [comm](const torch::Tensor& y) { return reduceFromTensorParallel(y, *comm); };
    }

    void vocab(Embedding& e, const std::string& prefix) {
        shard(e.weight, prefix + "weight", 0);
        const int64_t start = m_plan[prefix + "weight"].start;
        const int64_t count = m_plan[prefix + "weight"].length;
        Communicator* comm = m_tp.get();
        e.lookup = [comm, start, count](const torch::Tensor& tokens, const torch::Tensor& weight) {
            torch::Tensor outside = tokens.lt(start) | tokens.ge(start + count);
            torch::Tensor local = (tokens - start).masked_fill(outside, 0);
            torch::Tensor rows = torch::embedding(weight, local).masked_fill(outside.unsqueeze(-1), 0.0);
            return reduceFromTensorParallel(rows, *comm);
        };
    }

    void head(VocabHead& h, const std::string& prefix) {
        Linear& out = h.vocabProjection();
        std::string name;
        for (const auto& item : h.named_modules("", /*include_self=*/false))
            if (item.value().get() == &out) name = prefix + item.key() + ".weight";
        shard(out.weight, name, 0);
        out.out_features /= m_size;
        Communicator* comm = m_tp.get();
        out.input_transform = [comm](const torch::Tensor& x) { return copyToTensorParallel(x, *comm); };
        const int64_t start = m_plan[name].start;
        h.loss = [comm, start](const torch::Tensor& logits, const torch::Tensor& labels) {
            return vocabParallelCrossEntropy(logits, labels, start, *comm);
        };
    }

private:
    std::shared_ptr<Communicator> m_tp;
    TensorParallelPlan& m_plan;
    int64_t m_rank;
    int64_t m_size;
};

} // namespace

torch::Tensor copyToTensorParallel(const torch::Tensor& x, Communicator& tp) {
    return CopyToGroup::apply(x, commId(tp));
}

torch::Tensor reduceFromTensorParallel(const torch::Tensor& x, Communicator& tp) {
    return ReduceFromGroup::apply(x, commId(tp));
}

torch::Tensor vocabParallelCrossEntropy(const torch::Tensor& logits, const torch::Tensor& labels, int64_t vocabStart,
                                        Communicator& tp) {
    return VocabParallelCrossEntropy::apply(logits, labels, vocabStart, commId(tp));
}

TensorParallelPlan applyTensorParallel(Model& model, std::shared_ptr<Communicator> tp) {
    TensorParallelPlan plan;
    if (!tp || tp->size() == 1) return plan;
    PlanBuilder builder(tp, plan);
    for (int64_t i = 0; i < model.unitCount(); ++i) {
        const std::string unitPrefix = "units." + std::to_string(i) + ".";
        auto unit = model.unit(i);
        if (auto* head = dynamic_cast<VocabHead*>(unit.get())) {
            builder.head(*head, unitPrefix);
            continue;
        }
        for (const auto& item : unit->named_modules("", /*include_self=*/false)) {
            const std::string& name = item.key();
            const std::string prefix = unitPrefix + name + ".";
            if (auto* linear = dynamic_cast<Linear*>(item.value().get())) {
                // k and v split with the heads when tp divides the key/value heads (checked when
                // the layout is planned).
                if (linear->split == TensorSplit::Column || linear->split == TensorSplit::KvColumn)
                    builder.column(*linear, prefix);
                else if (linear->split == TensorSplit::Row)
                    builder.row(*linear, prefix);
            } else if (auto* embedding = dynamic_cast<Embedding*>(item.value().get())) {
                if (embedding->vocab_parallel) builder.vocab(*embedding, prefix);
            } else if (auto* norm = dynamic_cast<RmsNorm*>(item.value().get()); norm && norm->per_head) {
                // Replicated, but each rank's gradient covers its heads only: summed over the group.
                norm->weight_transform = [tp](const torch::Tensor& w) { return copyToTensorParallel(w, *tp); };
            }
        }
    }
    return plan;
}

} // namespace parallax
