#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace parallax {

// Minimum and maximum over aligned blocks of a growing sequence of values, at every scale: level
// k holds one entry per block of kBlock * 2^k values. A block is stored once all its values are
// final, so appending is amortized O(1) and nothing is ever recomputed. The minimum and maximum
// of any index range then take O(kBlock + log n): the ragged ends are scanned, the middle is
// covered by at most two blocks per level. Non-finite values (NaN, inf) are skipped.
class MetricSeriesPyramid {
public:
    static constexpr size_t kBlock = 16;

    // The extremes of a range and where they are; empty when it has no finite value.
    struct Extent {
        double min = std::numeric_limits<double>::infinity();
        double max = -std::numeric_limits<double>::infinity();
        size_t minIndex = 0;
        size_t maxIndex = 0;
        bool empty() const { return !(min <= max); }
        void add(double v, size_t i) {
            if (!std::isfinite(v)) return;
            if (v < min) {
                min = v;
                minIndex = i;
            }
            if (v > max) {
                max = v;
                maxIndex = i;
            }
        }
        void merge(const Extent& o) {
            if (o.empty()) return;
            if (o.min < min) {
                min = o.min;
                minIndex = o.minIndex;
            }
            if (o.max > max) {
                max = o.max;
                maxIndex = o.maxIndex;
            }
        }
    };

    void clear() {
        m_levels.clear();
        m_covered = 0;
    }

    // Values absorbed into level 0 (a multiple of kBlock); values past it are scanned by queries.
    size_t covered() const { return m_covered; }

    // Absorbs the complete blocks among the first `finalCount` values. valueAt(i) -> double.
    template <typename ValueAt>
    void extend(size_t finalCount, const ValueAt& valueAt) {
        while (m_covered + kBlock <= finalCount) {
            Extent e;
            for (size_t i = m_covered; i < m_covered + kBlock; ++i) e.add(valueAt(i), i);
            push(0, e);
            m_covered += kBlock;
        }
    }

    // Minimum and maximum of values [a, b). valueAt(i) must serve every index in the range; only
    // those outside the absorbed blocks are read.
    template <typename ValueAt>
    Extent extent(size_t a, size_t b, const ValueAt& valueAt) const {
        Extent e;
        if (a >= b) return e;
        const size_t a0 = (a + kBlock - 1) / kBlock * kBlock;
        const size_t b0 = std::min(b, m_covered) / kBlock * kBlock;
        if (a0 >= b0) {
            for (size_t i = a; i < b; ++i) e.add(valueAt(i), i);
            return e;
        }
        for (size_t i = a; i < a0; ++i) e.add(valueAt(i), i);
        for (size_t i = b0; i < b; ++i) e.add(valueAt(i), i);
        size_t lo = a0 / kBlock, hi = b0 / kBlock;
        for (size_t level = 0; lo < hi; ++level, lo >>= 1, hi >>= 1) {
            const std::vector<Extent>& blocks = m_levels[level];
            if (lo & 1) e.merge(blocks[lo++]);
            if (hi & 1) e.merge(blocks[--hi]);
        }
        return e;
    }

    size_t levelCount() const { return m_levels.size(); }
    size_t memoryBytes() const {
        size_t n = 0;
        for (const auto& l : m_levels) n += l.capacity() * sizeof(Extent);
        return n;
    }

private:
    void push(size_t level, const Extent& e) {
        if (m_levels.size() <= level) m_levels.emplace_back();
        std::vector<Extent>& blocks = m_levels[level];
        blocks.push_back(e);
        // Two siblings complete: their parent is final too.
        if (blocks.size() % 2 == 0) {
            Extent parent = blocks[blocks.size() - 2];
            parent.merge(blocks.back());
            push(level + 1, parent);
        }
    }

    std::vector<std::vector<Extent>> m_levels;
    size_t m_covered = 0;
};

} // namespace parallax
