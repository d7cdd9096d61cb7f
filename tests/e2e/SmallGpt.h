#pragma once

#include "tests/e2e/RunProcesses.h"

#include <string>

namespace parallax::testing {

// The spec of a small GPT on CPU ranks (synthetic data, one thread per rank), as a file holds it.
struct SmallGpt {
    std::string name = "small";
    int layers = 4, dim = 128, heads = 4, ffn = 512, vocab = 4096, seq_len = 256;
    int global_batch = 4, micro_batch = 2, dp = 2;

    std::string toml() const {
        const auto n = [](int v) { return std::to_string(v); };
        return "name = \"" + name + "\"\n[model]\nkind = \"gpt\"\npreset = \"custom\"\nlayers = " + n(layers) +
               "\ndim = " + n(dim) + "\nheads = " + n(heads) + "\nffn = " + n(ffn) + "\nvocab = " + n(vocab) +
               "\nseq_len = " + n(seq_len) + "\n[train]\nsteps = 20\nglobal_batch = " + n(global_batch) +
               "\nmicro_batch = " + n(micro_batch) + "\n[parallel]\ndp = " + n(dp) +
               "\n[launch]\nthreads_per_rank = 1\n";
    }
};

} // namespace parallax::testing
