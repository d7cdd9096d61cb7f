#pragma once

namespace parallax {

// Keeps the host memory a process frees for its next allocations instead of handing it back to the
// kernel. A training step allocates and frees the same large buffers every step (logits over Qwen's
// 152k-token vocabulary: 150 MB for three samples of 80 tokens); glibc maps each block above 32 MiB
// afresh and trims the heap's top, so every step page-faults hundreds of MB in again, which took
// most of a CPU step (a tiny qwen2_5_vl LoRA run of 10 steps on six conversations, through
// parallax-cli: 23.7 s, 18.1 of them in the kernel; 7.0 s with freed memory kept).
// The cost: the resident memory stays at the process's peak. Call first thing in main().
void keepFreedMemoryInTheHeap();
// Hands what the heap holds free back to the kernel, once, after work whose peak later steps do
// not reach (loading a model folder: its file mapped, its values converted).
void releaseFreedMemory();

} // namespace parallax
