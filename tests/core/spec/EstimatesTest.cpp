#include "core/spec/Estimates.h"
#include "core/spec/SpecIO.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <stdexcept>

namespace parallax {
namespace {

ModelDims dimsOf(const char* kind, const char* preset) {
    ModelSpec m;
    m.kind = Choice<ModelKind>::named(kind);
    m.preset = preset;
    return resolveModel(m);
}

TEST(Estimates, Gpt2SizedModelCountsExactly) {
    // gpt base: L = 12, C = 768, H = 12, F = 3072, V = 50304, T = 1024 (docs/models.md).
    // Embedding: tokens V C = 50304 * 768 = 38,633,472; positions T C = 1024 * 768 = 786,432.
    // Block: 4 C^2 + 4 C + 2 C F + F + C + 4 C
    //      = 2,359,296 + 3,072 + 4,718,592 + 3,072 + 768 + 3,072 = 7,087,872; x 12 = 85,054,464.
    // Head: LayerNorm 2 C = 1,536; Linear(C, V) without bias = 38,633,472.
    // Total: 38,633,472 + 786,432 + 85,054,464 + 1,536 + 38,633,472 = 163,109,376
    // (GPT-2's 124M ties the head to the embedding; this model does not).
    const ModelDims d = dimsOf("gpt", "base");
    ASSERT_EQ(d.layers, 12);
    ASSERT_EQ(d.dim, 768);
    ASSERT_EQ(d.vocab, 50304);
    ASSERT_EQ(d.seq_len, 1024);
    EXPECT_EQ(parameterCount(d), 163109376);
}

TEST(Estimates, OneBillionPresetIsInRange) {
    const int64_t n = parameterCount(dimsOf("gpt", "1b"));
    // 24 blocks of 50,358,272 + two 103M vocabulary matrices + positions: 1.417B.
    EXPECT_GT(n, 1300000000);
    EXPECT_LT(n, 1500000000);
    EXPECT_EQ(n, 1416744960);
}

TEST(Estimates, FlopsFollowTheDocument) {
    // gpt base, per token: 2 x (L (4 C^2 + 2 C F) + C V) + L 4 T C
    //   = 2 x (12 x 7,077,888 + 38,633,472) + 12 x 4 x 1024 x 768 = 247,136,256 + 37,748,736 = 284,884,992
    // training = 3 x forward = 854,654,976 per token.
    RunSpec gpt;
    gpt.model.preset = "base";
    const Estimates g = estimate(gpt);
    EXPECT_DOUBLE_EQ(g.flops_per_token, 854654976.0);
    EXPECT_DOUBLE_EQ(g.flops_per_sample, 854654976.0 * 1024);
    EXPECT_EQ(g.tokens_per_step, 8 * 1024);

}

// qwen_image tiny: C = 64 (2 heads of 32), F = 4 C = 256, prompt states of 48, T = 16 prompt tokens,
// latents 16 x 12 x 12 packed 2 x 2: P = 36 tokens of 64 values; S = T + P = 52.
TEST(Estimates, QwenImageCountsAndFlopsFollowTheDocument) {
    // Embed: img_in 64 x 64 + 64 = 4,160; txt_norm 48; txt_in 48 x 64 + 64 = 3,136; timestep
    //   linear_1 256 x 64 + 64 = 16,448, linear_2 64 x 64 + 64 = 4,160               -> 27,952
    // Block, per stream: mod Linear(C, 6 C) 24,960; q, k, v 3 x 4,160 = 12,480; q and k norms 2 x 32;
    //   out 4,160; MLP 64 x 256 + 256 = 16,640 and 256 x 64 + 64 = 16,448 -> 74,752; both 149,504
    //   (the last block holds its text stream's unused layers too, as the published model does)
    // Head: norm_out.linear 64 x 128 + 128 = 8,320; proj_out 64 x 64 + 64 = 4,160     -> 12,480
    // Total 27,952 + 2 x 149,504 + 12,480 = 339,440
    const ModelDims d = dimsOf("qwen_image", "tiny");
    EXPECT_EQ(parameterCount(d), 339440);
    // Multiply-adds a sample: img_in 36 x 4,096 = 147,456; txt_in 16 x 3,072 = 49,152; timestep
    //   16,384 + 4,096 = 20,480; a block's modulations 2 x 64 x 384 = 49,152 and 49,152 a token of
    //   either stream (q, k, v, out 4 x 4,096; MLP 2 x 16,384): first block 49,152 + 52 x 49,152 =
    //   2,605,056; the last block's text gives k and v only: 49,152 + 36 x 49,152 + 16 x 8,192 =
    //   1,949,696; head 8,192 + 36 x 4,096 = 155,648                                    -> 4,927,488
    // Attention: 4 S^2 C = 692,224 in the first block, 4 x 36 x 52 x 64 = 479,232 in the last
    // (image queries only)                                                              -> 1,171,456
    // Forward = 2 x 4,927,488 + 1,171,456 = 11,026,432.
    EXPECT_DOUBLE_EQ(forwardFlopsPerSample(d), 11026432.0);
    EXPECT_EQ(pipelineBlocks(dimsOf("qwen_image", "20b")), 60);
}

RunSpec layout(const char* preset, int64_t dp, int64_t tp, int64_t pp, int64_t zero) {
    RunSpec s;
    s.model.preset = preset;
    s.parallel.dp = dp;
    s.parallel.tp = tp;
    s.parallel.pp = pp;
    s.parallel.zero = zero;
    s.train.micro_batch = 4;
    s.train.global_batch = 4 * dp * 4;
    return s;
}

TEST(Estimates, ZeroStagesShardWhatTheyPromise) {
    const Estimates z0 = estimate(layout("small", 4, 1, 1, 0));
    const Estimates z1 = estimate(layout("small", 4, 1, 1, 1));
    const Estimates z2 = estimate(layout("small", 4, 1, 1, 2));
    const Estimates z3 = estimate(layout("small", 4, 1, 1, 3));
    const double params = double(z0.params);
    EXPECT_DOUBLE_EQ(z0.memory.weights, 4 * params);
    EXPECT_DOUBLE_EQ(z0.memory.gradients, 4 * params);
    EXPECT_DOUBLE_EQ(z0.memory.optimizer, 8 * params);

    EXPECT_DOUBLE_EQ(z1.memory.optimizer, z0.memory.optimizer / 4);
    EXPECT_DOUBLE_EQ(z1.memory.gradients, z0.memory.gradients);
    EXPECT_DOUBLE_EQ(z2.memory.gradients, z0.memory.gradients / 4);
    EXPECT_DOUBLE_EQ(z2.memory.weights, z0.memory.weights);
    EXPECT_DOUBLE_EQ(z3.memory.weights, z0.memory.weights / 4);
    EXPECT_DOUBLE_EQ(z3.memory.activations, z0.memory.activations);
    EXPECT_GT(z3.memory.buffers, z0.memory.buffers); // gathered units
    EXPECT_GT(z0.memory.total(), z1.memory.total());
    EXPECT_GT(z1.memory.total(), z2.memory.total());
    EXPECT_GT(z2.memory.total(), z3.memory.total());
}

TEST(Estimates, TensorParallelSplitsWeightsAndActivations) {
    const Estimates tp1 = estimate(layout("small", 1, 1, 1, 0));
    const Estimates tp2 = estimate(layout("small", 1, 2, 1, 0));
    EXPECT_EQ(tp1.params, tp2.params);
    EXPECT_LT(tp2.memory.weights, tp1.memory.weights);
    EXPECT_GT(tp2.memory.weights, tp1.memory.weights / 2); // norms, positions and some biases are replicated
    EXPECT_LT(tp2.memory.activations, tp1.memory.activations);
    EXPECT_GT(tp2.memory.activations, tp1.memory.activations / 2);
}

TEST(Estimates, PipelineStagesHoldTheirUnits) {
    const Estimates whole = estimate(layout("small", 1, 1, 1, 0));
    const Estimates two = estimate(layout("small", 1, 1, 2, 0));
    ASSERT_EQ(two.memory_per_stage.size(), 2u);
    EXPECT_DOUBLE_EQ(two.memory_per_stage[0].weights + two.memory_per_stage[1].weights, whole.memory.weights);
    // gpt small: C = 256, T = 256, V = 256; 3 blocks each. Stage 0 adds the embedding (V C + T C),
    // stage 1 the head (2 C + C V): the difference is T C - 2 C = 65,536 - 512 = 65,024 parameters.
    EXPECT_DOUBLE_EQ(two.memory_per_stage[0].weights - two.memory_per_stage[1].weights, 4.0 * 65024);
    EXPECT_DOUBLE_EQ(two.memory.total(), std::max(two.memory_per_stage[0].total(), two.memory_per_stage[1].total()));

    // Explicit stage_layers move blocks.
    RunSpec uneven = layout("small", 1, 1, 2, 0);
    uneven.parallel.stage_layers = {1, 5};
    const Estimates u = estimate(uneven);
    EXPECT_LT(u.memory_per_stage[0].weights, two.memory_per_stage[0].weights);
    EXPECT_DOUBLE_EQ(u.memory_per_stage[0].weights + u.memory_per_stage[1].weights, whole.memory.weights);
}

TEST(Estimates, InFlightMicroBatchesFollowTheSchedule) {
    RunSpec s = layout("small", 1, 1, 4, 0);
    s.model.layers = 8;
    s.train.global_batch = 32; // 8 micro-batches of 4
    ASSERT_EQ(s.accumulation(), 8);
    const Estimates f = estimate(s);
    // Stages 1 and 2 hold two blocks each; 1f1b keeps p - s micro-batches: 3 and 2.
    EXPECT_DOUBLE_EQ(f.memory_per_stage[1].activations / f.memory_per_stage[2].activations, 3.0 / 2.0);
    s.parallel.schedule = Schedule::GPipe;
    const Estimates g = estimate(s);
    EXPECT_DOUBLE_EQ(g.memory_per_stage[1].activations / f.memory_per_stage[1].activations, 8.0 / 3.0);
    EXPECT_DOUBLE_EQ(g.memory_per_stage[1].activations, g.memory_per_stage[2].activations);
    s.parallel.schedule = Schedule::Interleaved;
    s.parallel.virtual_stages = 2;
    const Estimates i = estimate(s);
    // Chunks of one block; stage s keeps 2 (p - s - 1) + (v - 1) p + 1 chunks: 9 on stage 1, 7 on stage 2.
    EXPECT_DOUBLE_EQ(i.memory_per_stage[1].activations / i.memory_per_stage[2].activations, 9.0 / 7.0);
}

TEST(Estimates, PrecisionAndCheckpointing) {
    RunSpec s = layout("small", 2, 1, 1, 0);
    const Estimates fp32 = estimate(s);
    s.train.precision = Precision::Bf16;
    const Estimates bf16 = estimate(s);
    EXPECT_DOUBLE_EQ(bf16.memory.weights, 1.5 * fp32.memory.weights); // fp32 master + bf16 copy
    EXPECT_DOUBLE_EQ(bf16.memory.optimizer, fp32.memory.optimizer);
    EXPECT_DOUBLE_EQ(bf16.memory.activations, fp32.memory.activations / 2);
    s.train.activation_checkpointing = true;
    const Estimates ckpt = estimate(s);
    EXPECT_LT(ckpt.memory.activations, bf16.memory.activations / 2);
    EXPECT_DOUBLE_EQ(ckpt.memory.weights, bf16.memory.weights);
}

// train.recompute_blocks = k: each stage's first k blocks keep only their input, every other unit its
// activations, so that each block recomputed takes the same amount off its stage; each stage counts
// its own blocks, and every k lies between no checkpointing and checkpointing every unit.
TEST(Estimates, RecomputedBlocksAreCountedPerStage) {
    RunSpec s = layout("small", 1, 1, 2, 0); // 6 blocks: 3 a stage
    const Estimates none = estimate(s);
    s.train.activation_checkpointing = true;
    const Estimates all = estimate(s);
    std::vector<Estimates> some;
    for (int64_t k : {1, 2, 3}) {
        s.train.recompute_blocks = k;
        some.push_back(estimate(s));
    }
    for (size_t stage = 0; stage < 2; ++stage) {
        const auto acts = [stage](const Estimates& e) { return e.memory_per_stage[stage].activations; };
        EXPECT_LT(acts(some[0]), acts(none)) << stage;
        EXPECT_GT(acts(some[0]), acts(some[1])) << stage;
        EXPECT_NEAR(acts(some[0]) - acts(some[1]), acts(some[1]) - acts(some[2]), 1e-9 * acts(none)) << stage;
        // Every block recomputed: only the units that are no blocks (embedding, head) may keep more.
        EXPECT_GE(acts(some[2]), acts(all)) << stage;
        EXPECT_DOUBLE_EQ(some[2].memory_per_stage[stage].weights, none.memory_per_stage[stage].weights);
    }
    // More blocks than the stage has: every block, as with 3.
    s.train.recompute_blocks = 100;
    EXPECT_DOUBLE_EQ(estimate(s).memory.activations, some[2].memory.activations);
}

// The worker's kernels by device: on a GPU attention is fused (no H S^2 probabilities kept) and the
// loss's backward holds one array of the logits' size; on a CPU the probabilities are kept and the
// loss's backward holds two such arrays.
// The tiny qwen2 preset at micro-batch 2: Qwen's whole vocabulary, so the loss's arrays show.
RunSpec tinyQwen2() {
    RunSpec s;
    s.model.kind = ModelKind::Qwen2;
    s.model.preset = "tiny";
    s.train.micro_batch = 2;
    s.train.global_batch = 2;
    return s;
}

TEST(Estimates, ActivationsFollowTheKernelsOfTheDevice) {
    RunSpec s = tinyQwen2();
    const ModelDims d = resolveModel(s.model);
    const double S = double(d.seq_len), logits = S * double(d.vocab), mb = 2.0, bytes = 4.0;
    const double probabilities = double(d.layers) * double(d.heads) * S * S;
    const Estimates cpu = estimate(s);
    s.launch.device = Device::Cuda;
    const Estimates gpu = estimate(s);
    EXPECT_DOUBLE_EQ(cpu.memory.activations - gpu.memory.activations, (probabilities + logits) * mb * bytes);
    EXPECT_DOUBLE_EQ(cpu.memory.weights, gpu.memory.weights);
    // Under checkpointing the larger of a recomputed unit and the head with its loss arrays joins the
    // kept inputs: at Qwen's vocabulary, the head.
    s.train.activation_checkpointing = true;
    const Estimates ckpt = estimate(s);
    const double inputs = S + S * double(d.dim) * double(d.layers + 1); // token ids, then each unit's states
    const double head = 2.0 * S * double(d.dim) + logits + logits; // norm in and out, logits, one array
    EXPECT_NEAR(ckpt.memory.activations, (inputs + head) * mb * bytes, 1e-6 * ckpt.memory.activations);
}

// A CPU rank's resident peak also holds the runtime (LibTorch, MPI, the worker: 189 MiB measured)
// and the heap's slack, the loss's backward arrays once more; a GPU's figure is the allocator's,
// which holds neither. Both are in the total the form compares with the device.
TEST(Estimates, ACpuRankCountsItsRuntimeAndTheHeapsSlack) {
    RunSpec s = tinyQwen2();
    const ModelDims d = resolveModel(s.model);
    const double lossArrays = 2.0 * double(d.seq_len) * double(d.vocab) * 2 * 4; // two arrays, mb 2, fp32
    const Estimates cpu = estimate(s);
    EXPECT_DOUBLE_EQ(cpu.memory.runtime, 189.0 * 1024 * 1024 + lossArrays);
    EXPECT_DOUBLE_EQ(cpu.memory.total(), cpu.memory.weights + cpu.memory.gradients + cpu.memory.optimizer +
                                             cpu.memory.activations + cpu.memory.buffers + cpu.memory.runtime);
    s.launch.device = Device::Cuda;
    EXPECT_EQ(estimate(s).memory.runtime, 0.0);
    // A model without a vocabulary loss (qwen_image's flow matching) has the runtime alone.
    RunSpec image;
    image.model.kind = ModelKind::QwenImage;
    image.model.preset = "tiny";
    EXPECT_DOUBLE_EQ(estimate(image).memory.runtime, 189.0 * 1024 * 1024);
}

// A latent model's sample priced at its real shape: at the square grid the spec gives, the spec's
// price; the blocks' attention grows with the square of the sequence, so 2 x the image tokens costs
// more than 2 x, and the linear layers alone would cost less.
TEST(Estimates, ALatentSampleIsPricedAtItsShape) {
    RunSpec s;
    s.model.kind = ModelKind::QwenImage;
    s.model.preset = "tiny";
    const ModelDims d = resolveModel(s.model);
    const int64_t tokens = d.imageTokens();
    ASSERT_GT(tokens, 0);
    EXPECT_DOUBLE_EQ(trainingFlopsPerLatentSample(d, s.finetune, d.seq_len, tokens),
                     trainingFlopsPerSample(d, s.finetune));
    const double one = trainingFlopsPerLatentSample(d, s.finetune, d.seq_len, 15);
    const double two = trainingFlopsPerLatentSample(d, s.finetune, d.seq_len, 30);
    EXPECT_GT(two, one);
    EXPECT_LT(trainingFlopsPerLatentSample(d, s.finetune, d.seq_len, 14), one);
    EXPECT_GT(trainingFlopsPerLatentSample(d, s.finetune, 2 * d.seq_len, 15), one);
}

TEST(Estimates, BubbleValues) {
    EXPECT_DOUBLE_EQ(pipelineBubble(1, 8, Schedule::OneFOneB), 0.0);
    EXPECT_DOUBLE_EQ(pipelineBubble(4, 8, Schedule::OneFOneB), 3.0 / 11.0);
    EXPECT_DOUBLE_EQ(pipelineBubble(4, 8, Schedule::GPipe), 3.0 / 11.0);
    EXPECT_DOUBLE_EQ(pipelineBubble(4, 8, Schedule::Interleaved, 2), 3.0 / 19.0);
    EXPECT_DOUBLE_EQ(pipelineBubble(2, 1, Schedule::OneFOneB), 0.5);
    EXPECT_DOUBLE_EQ(pipelineBubble(8, 32, Schedule::Interleaved, 4), 7.0 / 135.0);
    EXPECT_DOUBLE_EQ(pipelineBubble(4, 8, Schedule::OneFOneB, 2), 3.0 / 11.0); // chunks count only when interleaved

    RunSpec s = layout("small", 1, 1, 2, 0);
    s.train.global_batch = 24; // 6 micro-batches
    EXPECT_DOUBLE_EQ(estimate(s).bubble, 1.0 / 7.0);
    // zb1: ZB-H1 with equal F, B and W passes, p - 1 idle units beside 3m.
    EXPECT_DOUBLE_EQ(pipelineBubble(4, 8, Schedule::ZeroBubble), 3.0 / 27.0);
    EXPECT_DOUBLE_EQ(pipelineBubble(1, 8, Schedule::ZeroBubble), 0.0);
    s.parallel.schedule = Schedule::ZeroBubble;
    EXPECT_DOUBLE_EQ(estimate(s).bubble, 1.0 / 19.0);
}

TEST(Estimates, ZeroBubbleHoldsAsManyMicroBatchesOnEveryStageAsOneFOneBOnTheFirst) {
    RunSpec s = layout("small", 1, 1, 2, 0);
    s.train.global_batch = 24; // 6 micro-batches
    const Estimates oneFOneB = estimate(s);
    s.parallel.schedule = Schedule::ZeroBubble;
    const Estimates zb = estimate(s);
    ASSERT_EQ(zb.memory_per_stage.size(), 2u);
    // Stage 0 holds 2 micro-batches either way; the last stage 1 under 1f1b, 2 under zb1 (one
    // waiting for its W pass), besides the loss's backward arrays, once: on a CPU two arrays of the
    // logits' size (T x V = 256 x 256), fp32, per sample of the micro-batch.
    EXPECT_DOUBLE_EQ(zb.memory_per_stage[0].activations, oneFOneB.memory_per_stage[0].activations);
    const double lossArrays = 2.0 * 256 * 256 * 4 * double(s.train.micro_batch);
    EXPECT_DOUBLE_EQ(zb.memory_per_stage[1].activations - lossArrays,
                     2 * (oneFOneB.memory_per_stage[1].activations - lossArrays));
    // A waiting W keeps its Linear layers' inputs and output gradients even under checkpointing.
    s.train.activation_checkpointing = true;
    EXPECT_GT(estimate(s).memory_per_stage[0].activations, oneFOneB.memory_per_stage[0].activations);
}

TEST(Estimates, PipelinePieces) {
    RunSpec s;
    s.model.preset = "small"; // 6 layers
    s.parallel.pp = 4;
    const ModelDims d = resolveModel(s.model);
    // Balanced by cost: no piece takes more than two of the six equal blocks.
    const auto balanced = pipelinePieces(s, d);
    ASSERT_EQ(balanced.size(), 4u);
    EXPECT_EQ(balanced[0] + balanced[1] + balanced[2] + balanced[3], 6);
    EXPECT_EQ(*std::max_element(balanced.begin(), balanced.end()), 2);
    s.parallel.stage_layers = {2, 1, 1, 2};
    EXPECT_EQ(pipelinePieces(s, d), (std::vector<int64_t>{2, 1, 1, 2}));
    s.parallel.stage_layers = {1, 1}; // does not fit pp
    EXPECT_THROW(pipelinePieces(s, d), std::invalid_argument);
    s.parallel.stage_layers.clear();
    // A head as expensive as several blocks moves blocks off the last stage.
    RunSpec big;
    big.model.preset = "base"; // vocab 50304: the head costs about three blocks
    big.parallel.pp = 4;
    const auto pieces = pipelinePieces(big, resolveModel(big.model));
    EXPECT_LT(pieces.back(), pieces.front());
    s.parallel.pp = 3;
    s.parallel.schedule = Schedule::Interleaved;
    s.parallel.virtual_stages = 2;
    EXPECT_EQ(pipelinePieces(s, d), (std::vector<int64_t>{1, 1, 1, 1, 1, 1}));
    EXPECT_EQ(pipelineBlocks(dimsOf("qwen2_5_vl", "7b")), 28 + 32); // the tower's blocks, then the language model's
    EXPECT_EQ(pipelineBlocks(dimsOf("qwen_image", "20b")), 60);
}

TEST(Estimates, UnknownModelThrows) {
    RunSpec s;
    s.model.kind.setName("resnet");
    EXPECT_THROW(estimate(s), std::invalid_argument);
}

TEST(Estimates, Formatting) {
    EXPECT_EQ(formatCount(124439808), "124.4M");
    EXPECT_EQ(formatCount(1.31e9), "1.31B");
    EXPECT_EQ(formatCount(512), "512");
    EXPECT_EQ(formatCount(12345), "12.3K");
    EXPECT_EQ(formatCount(999960), "1.0M"); // not "1000.0K"
    EXPECT_EQ(formatCount(2.5e12), "2.50T");
    EXPECT_EQ(formatBytes(3.2 * 1024 * 1024 * 1024), "3.2 GiB");
    EXPECT_EQ(formatBytes(512), "512 B");
    EXPECT_EQ(formatBytes(1536), "1.5 KiB");
    EXPECT_EQ(formatBytes(25.0 * 1024 * 1024), "25.0 MiB");
    EXPECT_EQ(formatBytes(1023.99 * 1024), "1.0 MiB");
}

} // namespace
} // namespace parallax
