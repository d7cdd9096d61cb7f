#include "trainer/data/DistributedSampler.h"

#include "trainer/data/DatasetUtils.h"

#include <stdexcept>
#include <string>

namespace parallax {

namespace {

constexpr uint64_t kPermutationStream = 0x7065726dULL;

// A small, portable generator (splitmix64) so that permutations are identical everywhere.
class SplitMix {
public:
    explicit SplitMix(uint64_t seed) : m_state(seed) {}
    uint64_t next() {
        uint64_t z = (m_state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    // Uniform in [0, bound), without modulo bias.
    uint64_t below(uint64_t bound) {
        const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
        uint64_t x = next();
        while (x >= limit) x = next();
        return x % bound;
    }

private:
    uint64_t m_state;
};

} // namespace

DistributedSampler::DistributedSampler(int64_t datasetSize, int64_t globalBatch, int64_t dpSize, int64_t dpRank,
                                       int64_t microBatch, uint64_t seed, bool shuffle)
    : m_size(datasetSize), m_globalBatch(globalBatch), m_dpSize(dpSize), m_dpRank(dpRank), m_microBatch(microBatch),
      m_seed(seed), m_shuffle(shuffle), m_epochLength(datasetSize) {
    if (datasetSize <= 0) throw std::invalid_argument("the dataset is empty");
    if (globalBatch <= 0 || microBatch <= 0 || dpSize <= 0)
        throw std::invalid_argument("train.global_batch, train.micro_batch and parallel.dp must be positive");
    if (dpRank < 0 || dpRank >= dpSize)
        throw std::invalid_argument("data-parallel rank " + std::to_string(dpRank) + " is outside 0.." +
                                    std::to_string(dpSize - 1));
    if (globalBatch % (dpSize * microBatch) != 0)
        throw std::invalid_argument("train.global_batch = " + std::to_string(globalBatch) +
                                    " is not a multiple of parallel.dp * train.micro_batch = " +
                                    std::to_string(dpSize * microBatch));
}

namespace {

template <class T> void shuffleWith(SplitMix& rng, std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(static_cast<uint64_t>(i))]);
}

} // namespace

int64_t DistributedSampler::setGroups(const std::vector<int64_t>& groups) {
    if (static_cast<int64_t>(groups.size()) != m_size)
        throw std::invalid_argument("the sample groups number " + std::to_string(groups.size()) + ", the dataset " +
                                    std::to_string(m_size));
    std::map<int64_t, std::vector<int64_t>> byGroup;
    for (int64_t i = 0; i < m_size; ++i) byGroup[groups[static_cast<size_t>(i)]].push_back(i);
    m_groups.clear();
    m_permutations.clear();
    m_epochLength = m_size;
    if (byGroup.size() <= 1) return 0;
    int64_t used = 0;
    for (auto& [group, members] : byGroup) {
        used += static_cast<int64_t>(members.size()) / m_microBatch * m_microBatch;
        m_groups.push_back(std::move(members));
    }
    if (used == 0)
        throw std::invalid_argument("no group of samples (aspect bucket) has train.micro_batch = " +
                                    std::to_string(m_microBatch) + " samples: lower train.micro_batch");
    m_epochLength = used;
    return m_size - used;
}

const std::vector<int64_t>& DistributedSampler::permutation(int64_t epoch) {
    auto found = m_permutations.find(epoch);
    if (found != m_permutations.end()) return found->second;
    if (m_permutations.size() >= 2) m_permutations.erase(m_permutations.begin());
    SplitMix rng(hashValues({kPermutationStream, m_seed, static_cast<uint64_t>(epoch)}));
    std::vector<int64_t> perm;
    perm.reserve(static_cast<size_t>(m_epochLength));
    if (m_groups.empty()) {
        for (int64_t i = 0; i < m_size; ++i) perm.push_back(i);
        if (m_shuffle) shuffleWith(rng, perm);
    } else {
        std::vector<std::vector<int64_t>> runs;
        for (std::vector<int64_t> members : m_groups) {
            if (m_shuffle) shuffleWith(rng, members);
            for (size_t i = 0; i + static_cast<size_t>(m_microBatch) <= members.size(); i += static_cast<size_t>(m_microBatch))
                runs.emplace_back(members.begin() + static_cast<std::ptrdiff_t>(i),
                                  members.begin() + static_cast<std::ptrdiff_t>(i) + m_microBatch);
        }
        if (m_shuffle) shuffleWith(rng, runs);
        for (const std::vector<int64_t>& run : runs) perm.insert(perm.end(), run.begin(), run.end());
    }
    return m_permutations.emplace(epoch, std::move(perm)).first->second;
}

int64_t DistributedSampler::indexAt(int64_t position) {
    return permutation(position / m_epochLength)[static_cast<size_t>(position % m_epochLength)];
}

std::vector<int64_t> DistributedSampler::microBatch(int64_t step, int64_t micro) {
    if (micro < 0 || micro >= microBatches())
        throw std::out_of_range("micro-batch " + std::to_string(micro) + " is outside 0.." +
                                std::to_string(microBatches() - 1));
    const int64_t first = step * m_globalBatch + m_dpRank * (m_globalBatch / m_dpSize) + micro * m_microBatch;
    std::vector<int64_t> indices;
    indices.reserve(static_cast<size_t>(m_microBatch));
    for (int64_t p = first; p < first + m_microBatch; ++p) indices.push_back(indexAt(p));
    return indices;
}

} // namespace parallax
