#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// Where one parameter lives inside a bucket's flat buffers.
struct ParamSlot {
    std::string name;
    torch::Tensor param;   // a view of bucket.params, shaped like the parameter
    int bucket = 0;
    int64_t offset = 0;    // in elements, inside the bucket
    int64_t numel = 0;
    std::vector<int64_t> shape;
    bool decay = true;     // weight decay applies (matrices and embeddings; not biases and norms)
};

// A bucket: the parameters and gradients of several parameters in two flat fp32 tensors. Every
// parameter becomes a view of `params` and its `.grad()` a view of `grads`, so autograd accumulates
// straight into the buffer a collective reduces, and the optimizer updates a few large tensors.
struct Bucket {
    torch::Tensor params;  // (numel)
    torch::Tensor grads;   // (numel)
    std::vector<int> slots; // indices into GradBuckets::slots(), in the order gradients should arrive
    bool decay = true;
    int64_t numel() const { return params.numel(); }
};

// Packs trainable parameters into buckets of at most `bucketBytes`, in reverse registration order
// (backward produces the last layers' gradients first), never mixing decay and no-decay parameters.
class GradBuckets {
public:
    GradBuckets(const std::vector<std::pair<std::string, torch::Tensor>>& namedParams, double bucketBytes);

    const std::vector<ParamSlot>& slots() const { return m_slots; }
    std::vector<Bucket>& buckets() { return m_buckets; }
    const std::vector<Bucket>& buckets() const { return m_buckets; }
    int64_t numel() const;
    void zeroGrads();
    // Square root of the sum of squares of every gradient element held here.
    double localGradNormSquared() const;

private:
    std::vector<ParamSlot> m_slots;
    std::vector<Bucket> m_buckets;
};

// Parameters that are matrices or embeddings get weight decay; vectors (biases, norm gains) do not.
bool decays(const std::string& name, const torch::Tensor& param);

} // namespace parallax
