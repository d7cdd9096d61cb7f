#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <set>
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
    bool sharded = false;  // a tensor-parallel shard (else replicated over the tensor-parallel group)
};

// A bucket: the parameters and gradients of several parameters in two flat fp32 tensors. Every
// parameter becomes a view of `params` and its `.grad()` a view of `grads`, so autograd accumulates
// straight into the buffer a collective reduces, and the optimizer updates a few large tensors.
struct Bucket {
    torch::Tensor params;  // (numel), padded to a multiple of BucketOptions::padMultiple
    torch::Tensor grads;   // (numel)
    std::vector<int> slots; // indices into GradBuckets::slots(), in the order gradients should arrive
    bool decay = true;
    bool sharded = false;
    int unit = -1;          // the model unit whose parameters it holds (BucketOptions::perUnit)
    int64_t used = 0;       // elements holding parameters; the rest is padding
    // It holds a tied copy (TiedParameters): its gradient equals its source's, so a gradient norm
    // counts it there only.
    bool tiedCopy = false;
    int64_t numel() const { return params.numel(); }
};

struct BucketOptions {
    double bucketBytes = 25.0 * 1024 * 1024;
    std::set<std::string> sharded; // tensor-parallel shards
    int64_t padMultiple = 1;        // ZeRO: equal shards for every data-parallel rank
    bool perUnit = false;           // ZeRO-3: buckets never span two units ("units.<i>." names)
    // Parameters that get a bucket of their own: two of the same size then have the same slices on
    // every data-parallel rank (TiedParameters).
    std::set<std::string> alone;
    // Parameters backward never reaches (parametersWithoutGradient): no weight decay, as torch's AdamW
    // skips a parameter whose gradient is None. Their gradients stay zero, so Adam moves them not at all.
    std::set<std::string> withoutGradient;
};

// Packs trainable parameters into buckets of at most `bucketBytes`, in reverse registration order
// (backward produces the last layers' gradients first), never mixing decay and no-decay parameters,
// nor tensor-parallel shards and replicated parameters (nor units, with perUnit, nor anything with
// a parameter of `alone`).
class GradBuckets {
public:
    GradBuckets(const std::vector<std::pair<std::string, torch::Tensor>>& namedParams, const BucketOptions& options);

    const std::vector<ParamSlot>& slots() const { return m_slots; }
    std::vector<Bucket>& buckets() { return m_buckets; }
    const std::vector<Bucket>& buckets() const { return m_buckets; }
    int64_t numel() const;
    void zeroGrads();

private:
    std::vector<ParamSlot> m_slots;
    std::vector<Bucket> m_buckets;
};

// Parameters that are matrices or embeddings get weight decay; vectors (biases, norm gains) do not.
bool decays(const std::string& name, const torch::Tensor& param);
// The unit index of a parameter named "units.<i>.…", or -1.
int unitOfParameter(const std::string& name);

// Sum of the squares of every element of `tensors` (all on one device): one norm per tensor (one
// multi-tensor pass on CUDA), the squares summed in float64 there, as a 1-element tensor (undefined
// when there are no tensors). Nothing is read back to the host.
torch::Tensor sumOfSquares(const std::vector<torch::Tensor>& tensors);

} // namespace parallax
