#pragma once

#include <cstdint>
#include <map>
#include <vector>

namespace parallax {

// Which dataset samples a data-parallel rank reads. The samples form one endless stream: epoch e
// is a permutation of [0, N) seeded by (seed, e) (the identity without shuffling), and step s
// takes the global batch at stream positions [s G, s G + G). Rank r owns the contiguous slice
// [r G/dp, (r+1) G/dp) of it and micro-batch k the slice [k mb, (k+1) mb) of that, so the union over
// ranks and micro-batches of a step is the global batch a single process with the same G reads.
//
// With groups (one id per sample, e.g. the aspect bucket of a latent's size; setGroups), a
// micro-batch holds samples of one group: an epoch permutes each group's samples, cuts them into
// runs of micro_batch (a group's last, shorter run is left out of that epoch), and permutes the
// runs; the stream is those runs end to end. Since every rank's slice and every micro-batch starts
// at a multiple of micro_batch, each micro-batch is one run, on any dp.
class DistributedSampler {
public:
    // Throws std::invalid_argument naming the field when G is not a multiple of dp * micro_batch.
    DistributedSampler(int64_t datasetSize, int64_t globalBatch, int64_t dpSize, int64_t dpRank, int64_t microBatch,
                       uint64_t seed, bool shuffle);

    // Dataset indices of micro-batch `micro` of this rank at `step`.
    std::vector<int64_t> microBatch(int64_t step, int64_t micro);
    // Micro-batches per rank per step (gradient accumulation).
    int64_t microBatches() const { return m_globalBatch / (m_dpSize * m_microBatch); }
    // The dataset index at a stream position.
    int64_t indexAt(int64_t position);
    // Micro-batches of one group each (above). One group or none: as without. Returns how many
    // samples an epoch leaves out (the groups' remainders); std::invalid_argument when no group has
    // micro_batch samples, or `groups` is not one id per sample.
    int64_t setGroups(const std::vector<int64_t>& groups);

private:
    const std::vector<int64_t>& permutation(int64_t epoch);

    int64_t m_size;
    int64_t m_globalBatch;
    int64_t m_dpSize;
    int64_t m_dpRank;
    int64_t m_microBatch;
    uint64_t m_seed;
    bool m_shuffle;
    std::vector<std::vector<int64_t>> m_groups; // sample indices by group; empty: not grouped
    int64_t m_epochLength;                      // stream positions an epoch has
    // The epochs recently read: a step spans at most two, so a small cache avoids redrawing.
    std::map<int64_t, std::vector<int64_t>> m_permutations;
};

} // namespace parallax
