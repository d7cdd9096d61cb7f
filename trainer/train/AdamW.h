#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace parallax {

struct AdamWOptions {
    double beta1 = 0.9;
    double beta2 = 0.95;
    double eps = 1e-8;
    double weight_decay = 0.1;
    // Fused on a GPU: the worker's own kernel (trainer/kernels/AdamW, one pass per group) where it
    // is built, else LibTorch's fused AdamW where it has one (2.x); the same arithmetic elementwise
    // elsewhere.
    bool fused = true;
    // LibTorch's fused AdamW even where the worker's kernel is built (tests compare the two).
    bool libtorchKernel = false;
};

// AdamW over flat fp32 tensors (whole buckets, or this rank's shard of them under ZeRO): a handful
// of large elementwise updates instead of one per parameter. Decoupled weight decay only where the
// group's `decay` is set. The update of each element depends on that element alone, so any
// partitioning of the parameters gives bit-identical results.
class AdamW {
public:
    struct Group {
        torch::Tensor param;    // flat fp32 (master) values
        torch::Tensor grad;     // same shape
        bool decay = true;
        torch::Tensor exp_avg;  // created on first use when undefined
        torch::Tensor exp_avg_sq;
    };

    explicit AdamW(AdamWOptions options) : m_options(options) {}
    void addGroup(torch::Tensor param, torch::Tensor grad, bool decay);
    // One update with learning rate `lr` after scaling every gradient by `gradScale` (clipping).
    void step(double lr, double gradScale = 1.0);
    // The same with the decision on the device: `gradScale` (0-dim, > 0; undefined: 1) multiplies every gradient
    // and no value changes where `skip` (0-dim bool) holds true; the update still counts. The fused
    // kernel reads both where they are, so the host does not wait for the gradients; elsewhere they
    // are read back first.
    void step(double lr, const torch::Tensor& gradScale, const torch::Tensor& skip);

    // The order groups are updated in (indices into groups(); every group once) and a call after each
    // group's update is queued, with its index: ZeRO-3 starts gathering a unit for the next forward
    // as soon as its slices are updated. Empty order: the groups' own order. LibTorch's fused AdamW
    // updates all groups in one call per weight-decay class, then the calls follow in this order.
    void setUpdateOrder(std::vector<size_t> order, std::function<void(size_t group)> afterGroup);

    int64_t stepCount() const { return m_step; }
    void setStepCount(int64_t step) { m_step = step; }
    std::vector<Group>& groups() { return m_groups; }
    const std::vector<Group>& groups() const { return m_groups; }

private:
    void update(double lr, double hostScale, const torch::Tensor& gradScale, const torch::Tensor& skip);
    // The update by the worker's kernel or LibTorch's fused one (fusedApplies()).
    void updateFused(double lr, double hostScale, const torch::Tensor& gradScale, const torch::Tensor& skip);
    bool fusedApplies() const;

    std::vector<size_t> order() const;
    // In the update order: `update` on each group this rank holds a slice of (none when null), then
    // the call after the group, for every group.
    void updateInOrder(const std::function<void(Group&)>& update);

    AdamWOptions m_options;
    std::vector<Group> m_groups;
    std::vector<size_t> m_order;
    std::function<void(size_t)> m_afterGroup;
    int64_t m_step = 0;
};

// Linear warmup from 0 to `lr` over `warmup` steps, then cosine decay to `minLr` at `steps`.
double learningRate(int64_t step, int64_t steps, int64_t warmup, double lr, double minLr);

} // namespace parallax
