#pragma once

#include "core/spec/ModelDims.h"
#include "core/spec/RunSpec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// Memory of one device for a layout, bytes.
struct MemoryEstimate {
    double weights = 0;      // parameters held (fp32 master + bf16 copy under bf16)
    double gradients = 0;
    double optimizer = 0;    // AdamW moments (fp32)
    double activations = 0;  // saved for backward, per in-flight micro-batch times in-flight count
    double buffers = 0;      // communication buckets, gathered ZeRO-3 units, pipeline send/recv
    // On a CPU the process's own resident memory beside the training state: LibTorch's and the
    // worker's runtime, and the holes the largest transient arrays leave in the heap, which keeps
    // freed blocks for the next step (trainer/compat/HostHeap.h). 0 on a GPU, where the step's peak
    // is the allocator's and counts neither the CUDA context nor its cache.
    double runtime = 0;
    double total() const { return weights + gradients + optimizer + activations + buffers + runtime; }
};

struct Estimates {
    int64_t params = 0;                // whole model
    int64_t trainable_params = 0;      // receiving gradients: without frozen parts, with LoRA adapters
    int64_t adapter_params = 0;        // LoRA adapters and copies of modules_to_save (trainable, beside params)
    double flops_per_token = 0;        // training (fwd + bwd) FLOPs per counted token, docs/models.md
    double flops_per_sample = 0;
    int64_t tokens_per_step = 0;       // counted once per data-parallel replica: global_batch * tokens/sample
    MemoryEstimate memory;             // the most loaded device of the layout (pipeline stage 0)
    std::vector<MemoryEstimate> memory_per_stage;
    double bubble = 0;                 // theoretical pipeline bubble fraction for the schedule
};

// Parameter count of a model of these dims (exactly what the trainer's model holds).
int64_t parameterCount(const ModelDims& dims);
double forwardFlopsPerSample(const ModelDims& dims);
// Training FLOPs per sample under `finetune` (docs/models.md): 3 x forward for a model that trains
// whole; a frozen unit before anything that trains (a frozen vision tower) its forward alone; a
// frozen unit after one (LoRA's base weights) its forward and input gradients, 2 x forward.
double trainingFlopsPerSample(const ModelDims& dims, const FinetuneSpec& finetune);
// The same for a latent model's sample at one batch's real shape: `textTokens` prompt states (the
// micro-batch's padded width, as the model computes them) and `imageTokens` packed image tokens
// (the image being made and an Edit sample's reference images).
double trainingFlopsPerLatentSample(const ModelDims& dims, const FinetuneSpec& finetune, int64_t textTokens,
                                    int64_t imageTokens);
// The idle share of a step's window with equal passes and free communication: (p - 1) / (m + p - 1)
// for gpipe and 1f1b; (p - 1) / (v m + p - 1) for interleaved with v chunks; (p - 1) / (3 m + p - 1)
// for zb1 (ZB-H1 with T_F = T_B = T_W: p - 1 idle units beside 3 m of compute).
double pipelineBubble(int64_t stages, int64_t microbatches, Schedule schedule, int64_t virtualStages = 1);

// Transformer blocks a pipeline divides among its stages: model.layers, plus model.vision_layers
// for qwen2_5_vl (vision blocks first, then the language model's). Every other unit rides along:
// the embedding with the first block, qwen2_5_vl's merger with the first language block, the head
// with the last block.
int64_t pipelineBlocks(const ModelDims& dims);
// The first unit of each pipeline piece (plus the unit count at the end), in model order:
// parallel.stage_layers when given, else the contiguous split that minimizes the most expensive
// piece by forward FLOPs (core/spec/StagePartition.h). Non-interleaved: pp pieces, piece s on
// stage s. Interleaved: pp * virtual_stages chunks, chunk c on stage c % pp. The trainer places
// units with this same function. Throws std::invalid_argument naming the field when impossible.
std::vector<int> pipelineUnitBounds(const RunSpec& spec, const ModelDims& dims);
// Blocks of each pipeline piece, from pipelineUnitBounds.
std::vector<int64_t> pipelinePieces(const RunSpec& spec, const ModelDims& dims);

// Throws std::invalid_argument (naming the field) when the model cannot be resolved.
Estimates estimate(const RunSpec& spec);

// "124.4M", "1.31B"; "3.2 GiB"
std::string formatCount(double n);
std::string formatBytes(double bytes);

} // namespace parallax
