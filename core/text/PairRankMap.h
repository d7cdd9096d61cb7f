#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace parallax {

// The merges of a BPE model: (left id, right id) -> (rank, id of the merged token), in one
// open-addressing table (the merge loop looks up a pair for every symbol it joins).
class PairRankMap {
public:
    struct Merge {
        int32_t rank = -1; // -1: no such merge
        int32_t id = -1;
    };

    void reserve(size_t pairs) {
        size_t capacity = 16;
        m_shift = 60;
        while (capacity < pairs + pairs / 2) { // at most two thirds full
            capacity *= 2;
            --m_shift;
        }
        m_slots.assign(capacity, Slot{});
        m_mask = capacity - 1;
    }
    // A pair given again takes the later rank, as in the Rust tokenizers' merge map.
    void insert(int32_t left, int32_t right, Merge merge) {
        const uint64_t key = pack(left, right);
        for (size_t i = slot(key);; i = (i + 1) & m_mask) {
            Slot& s = m_slots[i];
            if (s.key == kEmpty || s.key == key) {
                if (s.key == kEmpty)
                    ++m_size;
                s.key = key;
                s.merge = merge;
                return;
            }
        }
    }
    Merge find(int32_t left, int32_t right) const {
        if (m_slots.empty())
            return {};
        const uint64_t key = pack(left, right);
        for (size_t i = slot(key);; i = (i + 1) & m_mask) {
            const Slot& s = m_slots[i];
            if (s.key == key)
                return s.merge;
            if (s.key == kEmpty)
                return {};
        }
    }
    size_t size() const { return m_size; }

private:
    static constexpr uint64_t kEmpty = ~uint64_t{0}; // ids are non-negative: no pair packs to this
    static uint64_t pack(int32_t left, int32_t right) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    }
    // Fibonacci hashing: the top bits of the product.
    size_t slot(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> m_shift); }

    struct Slot { // key and value side by side: one cache line read per lookup
        uint64_t key = kEmpty;
        Merge merge;
    };
    std::vector<Slot> m_slots;
    size_t m_mask = 0;
    int m_shift = 60;
    size_t m_size = 0;
};

} // namespace parallax
