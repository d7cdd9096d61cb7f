#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace parallax {

// The tokens of words seen before: a fixed number of slots, each word in the slot of its hash
// (a newer word replaces an older one there), so memory stays bounded on any corpus. Locked per
// group of slots: threads encoding at once rarely wait on each other.
class WordCache {
public:
    explicit WordCache(size_t slots = size_t{1} << 16);

    // Appends the cached tokens of `word` (ids and their byte offsets in the word); false on a miss.
    bool get(std::string_view word, std::vector<int32_t>& ids, std::vector<uint32_t>& starts) const;
    void put(std::string_view word, const int32_t* ids, const uint32_t* starts, size_t count);

private:
    struct Slot {
        uint64_t hash = 0;
        std::string word;
        std::vector<int32_t> ids;
        std::vector<uint32_t> starts;
    };
    static uint64_t hashOf(std::string_view word);
    std::mutex& lockFor(size_t slot) const { return m_locks[slot & (kLocks - 1)]; }

    static constexpr size_t kLocks = 64;
    std::vector<Slot> m_slots;
    size_t m_mask;
    std::unique_ptr<std::mutex[]> m_locks;
};

} // namespace parallax
