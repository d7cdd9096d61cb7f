#include "core/text/BpeModel.h"

#include "core/text/ByteLevel.h"
#include "core/text/TokenizerError.h"

#include <algorithm>
#include <cstdio>

namespace parallax {

namespace {

constexpr size_t kLongestCachedWord = 256; // bytes; longer words are rare and would crowd the cache

struct Candidate {
    int32_t rank;
    int32_t pos; // the left symbol
    int32_t id;  // the merged token
};

// std::push_heap keeps the largest first: "larger" here is the later merge.
bool laterMerge(const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

} // namespace

BpeModel::BpeModel(std::unordered_map<std::string, int32_t> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options)
    : m_vocab(std::move(vocab)), m_options(std::move(options)) {
    if (m_options.unk_token) {
        const auto it = m_vocab.find(*m_options.unk_token);
        if (it == m_vocab.end())
            throw TokenizerError("model.unk_token " + quoted(*m_options.unk_token) + " is not in model.vocab");
        m_unkId = it->second;
    }
    const size_t prefixLength = m_options.continuing_subword_prefix.size();
    m_merges.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
        const auto& [a, b] = merges[i];
        const auto where = [&] { return "model.merges[" + std::to_string(i) + "] (" + quoted(a) + ", " + quoted(b) + ")"; };
        const auto left = m_vocab.find(a);
        const auto right = m_vocab.find(b);
        if (left == m_vocab.end() || right == m_vocab.end())
            throw TokenizerError(where() + " joins " + quoted(left == m_vocab.end() ? a : b) +
                                 ", which is not in model.vocab");
        if (b.size() < prefixLength)
            throw TokenizerError(where() + " has a right part shorter than continuing_subword_prefix");
        const std::string joined = a + b.substr(prefixLength);
        const auto merged = m_vocab.find(joined);
        if (merged == m_vocab.end())
            throw TokenizerError(where() + " makes " + quoted(joined) + ", which is not in model.vocab");
        m_merges.insert(left->second, right->second, {static_cast<int32_t>(i), merged->second});
    }
    for (int b = 0; b < 256; ++b) {
        const auto byte = static_cast<uint8_t>(b);
        m_initial[0][b] = initialFor(byte, true, false);
        m_initial[1][b] = initialFor(byte, false, false);
        m_initial[2][b] = initialFor(byte, false, true);
        m_initial[3][b] = initialFor(byte, true, true);
    }
}

BpeModel::Initial BpeModel::initialFor(uint8_t byte, bool first, bool last) const {
    std::string s = ByteLevel::instance().charFor(byte);
    if (!first)
        s = m_options.continuing_subword_prefix + s;
    if (last)
        s += m_options.end_of_word_suffix;
    Initial initial;
    if (const auto it = m_vocab.find(s); it != m_vocab.end()) {
        initial.kind = Initial::Token;
        initial.id = it->second;
        return initial;
    }
    if (m_options.byte_fallback) {
        std::vector<int32_t> ids;
        for (const char c : s) {
            char name[8];
            std::snprintf(name, sizeof name, "<0x%02X>", static_cast<uint8_t>(c));
            const auto it = m_vocab.find(name);
            if (it == m_vocab.end())
                break;
            ids.push_back(it->second);
        }
        if (ids.size() == s.size()) {
            initial.kind = Initial::Fallback;
            initial.fallback = std::move(ids);
            return initial;
        }
    }
    if (m_unkId >= 0) {
        initial.kind = Initial::Unknown;
        initial.id = m_unkId;
    }
    return initial;
}

void BpeModel::initialSymbols(std::string_view word, std::vector<Symbol>& symbols) const {
    symbols.clear();
    const size_t n = word.size();
    const auto add = [&](int32_t id, uint32_t start) {
        symbols.push_back({id, static_cast<int32_t>(symbols.size()) - 1, -1, start});
    };
    // An unknown character waits here: a run of them becomes one token when fuse_unk is set.
    int64_t pendingUnk = -1;
    for (size_t i = 0; i < n; ++i) {
        const int where = n == 1 ? 3 : i == 0 ? 0 : i + 1 == n ? 2 : 1;
        const Initial& initial = m_initial[where][static_cast<uint8_t>(word[i])];
        switch (initial.kind) {
        case Initial::Token:
            if (pendingUnk >= 0)
                add(m_unkId, static_cast<uint32_t>(pendingUnk));
            pendingUnk = -1;
            add(initial.id, static_cast<uint32_t>(i));
            break;
        case Initial::Fallback: // the Rust tokenizers leave a waiting unknown token waiting here too
            for (const int32_t id : initial.fallback)
                add(id, static_cast<uint32_t>(i));
            break;
        case Initial::Unknown:
            if (pendingUnk >= 0 && !m_options.fuse_unk)
                add(m_unkId, static_cast<uint32_t>(pendingUnk));
            if (pendingUnk < 0 || !m_options.fuse_unk)
                pendingUnk = static_cast<int64_t>(i);
            break;
        case Initial::Dropped: break;
        }
    }
    if (pendingUnk >= 0)
        add(m_unkId, static_cast<uint32_t>(pendingUnk));
    for (size_t i = 0; i + 1 < symbols.size(); ++i)
        symbols[i].next = static_cast<int32_t>(i + 1);
}

void BpeModel::mergeAll(std::vector<Symbol>& symbols) const {
    thread_local std::vector<Candidate> heap;
    heap.clear();
    const auto consider = [&](int32_t pos, int32_t left, int32_t right) {
        const PairRankMap::Merge m = m_merges.find(left, right);
        if (m.rank >= 0) {
            heap.push_back({m.rank, pos, m.id});
            std::push_heap(heap.begin(), heap.end(), laterMerge);
        }
    };
    for (size_t i = 0; i + 1 < symbols.size(); ++i)
        consider(static_cast<int32_t>(i), symbols[i].id, symbols[i + 1].id);
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), laterMerge);
        const Candidate top = heap.back();
        heap.pop_back();
        Symbol& s = symbols[top.pos];
        if (s.id < 0 || s.next < 0)
            continue; // merged into its left neighbour already, or the last symbol now
        Symbol& right = symbols[s.next];
        // A stale candidate: the pair at this place has changed since it was queued.
        const PairRankMap::Merge now = m_merges.find(s.id, right.id);
        if (now.rank < 0 || now.id != top.id)
            continue;
        s.id = top.id;
        right.id = -1;
        s.next = right.next;
        if (s.next >= 0)
            symbols[s.next].prev = top.pos;
        if (s.prev >= 0)
            consider(s.prev, symbols[s.prev].id, s.id);
        if (s.next >= 0)
            consider(top.pos, s.id, symbols[s.next].id);
    }
}

void BpeModel::encodeWord(std::string_view word, uint32_t base, std::vector<int32_t>& ids,
                          std::vector<uint32_t>& starts) const {
    if (word.empty())
        return;
    if (m_options.ignore_merges) {
        std::string mapped;
        for (const char c : word)
            mapped += ByteLevel::instance().charFor(static_cast<uint8_t>(c));
        if (const auto it = m_vocab.find(mapped); it != m_vocab.end()) {
            ids.push_back(it->second);
            starts.push_back(base);
            return;
        }
    }
    const bool cacheable = word.size() <= kLongestCachedWord;
    const size_t first = ids.size();
    if (cacheable && m_cache.get(word, ids, starts)) {
        for (size_t i = first; i < starts.size(); ++i)
            starts[i] += base;
        return;
    }
    thread_local std::vector<Symbol> symbols;
    initialSymbols(word, symbols);
    if (symbols.size() > 1)
        mergeAll(symbols);
    for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
        ids.push_back(symbols[i].id);
        starts.push_back(symbols[i].start);
    }
    if (cacheable)
        m_cache.put(word, ids.data() + first, starts.data() + first, ids.size() - first);
    for (size_t i = first; i < starts.size(); ++i)
        starts[i] += base;
}

} // namespace parallax
