#include "core/text/WordCache.h"

#include <cstring>

namespace parallax {

WordCache::WordCache(size_t slots) : m_locks(new std::mutex[kLocks]) {
    size_t n = 1;
    while (n < slots)
        n *= 2;
    m_slots.resize(n);
    m_mask = n - 1;
}

uint64_t WordCache::hashOf(std::string_view word) {
    // Eight bytes at a time, each step a multiply and a shift (words are short; this runs per word).
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ word.size();
    const auto mix = [&h](uint64_t v) {
        h = (h ^ v) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
    };
    size_t i = 0;
    for (; i + 8 <= word.size(); i += 8) {
        uint64_t v;
        std::memcpy(&v, word.data() + i, 8);
        mix(v);
    }
    uint64_t tail = 0;
    std::memcpy(&tail, word.data() + i, word.size() - i);
    mix(tail);
    return h ^ (h >> 29);
}

bool WordCache::get(std::string_view word, std::vector<int32_t>& ids, std::vector<uint32_t>& starts) const {
    const uint64_t raw = hashOf(word);
    const size_t i = raw & m_mask;
    const uint64_t h = raw | 1; // 0 marks an empty slot
    std::lock_guard<std::mutex> lock(lockFor(i));
    const Slot& s = m_slots[i];
    if (s.hash != h || s.word != word)
        return false;
    ids.insert(ids.end(), s.ids.begin(), s.ids.end());
    starts.insert(starts.end(), s.starts.begin(), s.starts.end());
    return true;
}

void WordCache::put(std::string_view word, const int32_t* ids, const uint32_t* starts, size_t count) {
    const uint64_t raw = hashOf(word);
    const size_t i = raw & m_mask;
    const uint64_t h = raw | 1; // 0 marks an empty slot
    std::lock_guard<std::mutex> lock(lockFor(i));
    Slot& s = m_slots[i];
    s.hash = h;
    s.word.assign(word.data(), word.size());
    s.ids.assign(ids, ids + count);
    s.starts.assign(starts, starts + count);
}

} // namespace parallax
