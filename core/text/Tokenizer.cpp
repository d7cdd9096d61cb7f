#include "core/text/Tokenizer.h"

#include "core/text/TokenizerError.h"
#include "core/text/TokenizerFiles.h"
#include "core/text/TokenizerImpl.h"
#include "core/text/Utf8Repair.h"
#include "core/util/Files.h"

#include <limits>

namespace parallax {

namespace {

// Texts are cut into pieces by 32-bit offsets.
void checkLength(std::string_view text) {
    if (text.size() >= std::numeric_limits<uint32_t>::max() / 2)
        throw TokenizerError("a text of " + std::to_string(text.size()) + " bytes is too long to encode at once; split it");
}

// Walks a text as encode sees it: `onAdded(id, bytes, offset)` for each added token and
// `onText(text, offset)` for each stretch between them, normalized; offsets are in the prepared text.
template <typename OnAdded, typename OnText>
void walk(const Tokenizer::Impl& t, std::string_view text, OnAdded&& onAdded, OnText&& onText) {
    std::vector<AddedTokenMatcher::Match> matches, normalizedMatches;
    t.rawMatcher.find(text, matches);
    uint32_t out = 0;
    const auto stretch = [&](std::string_view raw) {
        if (raw.empty())
            return;
        std::string normalized;
        const std::string_view s = t.normalizer.normalize(raw, normalized) ? std::string_view(normalized) : raw;
        normalizedMatches.clear();
        t.normalizedMatcher.find(s, normalizedMatches);
        size_t at = 0;
        for (const auto& m : normalizedMatches) {
            if (m.start > at)
                onText(s.substr(at, m.start - at), out + static_cast<uint32_t>(at));
            onAdded(m.id, s.substr(m.start, m.end - m.start), out + m.start);
            at = m.end;
        }
        if (at < s.size())
            onText(s.substr(at), out + static_cast<uint32_t>(at));
        out += static_cast<uint32_t>(s.size());
    };
    size_t at = 0;
    for (const auto& m : matches) {
        stretch(text.substr(at, m.start - at));
        onAdded(m.id, text.substr(m.start, m.end - m.start), out);
        out += m.end - m.start;
        at = m.end;
    }
    stretch(text.substr(at));
}

// The words of one stretch (pre-tokenizer), each merged by the model.
void encodeStretch(const Tokenizer::Impl& t, std::string_view text, uint32_t base, std::vector<int32_t>& ids,
                   std::vector<uint32_t>& starts) {
    thread_local std::vector<TextPiece> pieces, next;
    pieces.assign(1, TextPiece{0, static_cast<uint32_t>(text.size())});
    for (const SplitPattern& split : t.splits) {
        next.clear();
        for (const TextPiece& p : pieces)
            split.split(text.substr(p.start, p.end - p.start), p.start, next);
        pieces.swap(next);
    }
    thread_local std::vector<TextPiece> words;
    for (const TextPiece& p : pieces) {
        std::string_view piece = text.substr(p.start, p.end - p.start);
        std::string prefixed;
        if (t.prefixSpace && piece[0] != ' ') {
            prefixed = " " + std::string(piece);
            piece = prefixed;
        }
        words.clear();
        if (t.byteLevelRegex)
            t.byteLevelRegex->split(piece, 0, words);
        else
            words.push_back({0, static_cast<uint32_t>(piece.size())});
        for (const TextPiece& w : words) {
            const size_t first = starts.size();
            t.model->encodeWord(piece.substr(w.start, w.end - w.start), w.start, ids, starts);
            for (size_t i = first; i < starts.size(); ++i) {
                // The space put in front stands where the piece begins.
                const uint32_t s = prefixed.empty() || starts[i] == 0 ? starts[i] : starts[i] - 1;
                starts[i] = base + p.start + s;
            }
        }
    }
}

} // namespace

Tokenizer Tokenizer::load(const std::string& fileOrFolder) {
    if (!isDirectory(fileOrFolder))
        return fromJson(readTokenizerFile(fileOrFolder), fileOrFolder);
    const std::string file = joinPath(fileOrFolder, "tokenizer.json");
    if (pathExists(file))
        return fromJson(readTokenizerFile(file), file);
    if (!hasTokenizerFiles(fileOrFolder))
        throw TokenizerError(fileOrFolder + " has no tokenizer.json, nor the vocab.json, merges.txt and "
                             "tokenizer_config.json of a Qwen2Tokenizer (a Hugging Face model folder has one of the "
                             "two beside config.json)");
    return Tokenizer(readTokenizerJson(qwen2TokenizerJson(fileOrFolder), fileOrFolder + " (vocab.json, merges.txt)"));
}

Tokenizer Tokenizer::fromJson(const std::string& json, const std::string& source) {
    return Tokenizer(readTokenizerJson(json, source));
}

void Tokenizer::encode(std::string_view text, std::vector<int32_t>& ids, std::vector<uint32_t>* starts) const {
    checkLength(text);
    std::string repaired;
    if (!isValidUtf8(text)) {
        repaired = repairUtf8(text);
        text = repaired;
    }
    thread_local std::vector<uint32_t> scratch;
    std::vector<uint32_t>& s = starts ? *starts : scratch;
    if (!starts)
        scratch.clear();
    const Impl& t = *m_impl;
    walk(
        t, text,
        [&](int32_t id, std::string_view, uint32_t offset) {
            ids.push_back(id);
            s.push_back(offset);
        },
        [&](std::string_view stretch, uint32_t offset) { encodeStretch(t, stretch, offset, ids, s); });
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
    std::vector<int32_t> ids;
    ids.reserve(text.size() / 3 + 4);
    encode(text, ids, nullptr);
    return ids;
}

std::string Tokenizer::prepare(std::string_view text) const {
    checkLength(text);
    const std::string repaired = isValidUtf8(text) ? std::string(text) : repairUtf8(text);
    std::string out;
    out.reserve(repaired.size());
    const auto token = [&](int32_t, std::string_view piece, uint32_t) { out.append(piece.data(), piece.size()); };
    const auto stretch = [&](std::string_view piece, uint32_t) { out.append(piece.data(), piece.size()); };
    walk(*m_impl, repaired, token, stretch);
    return out;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skipSpecialTokens) const {
    const Impl& t = *m_impl;
    std::string bytes;
    for (const int32_t id : ids) {
        if (id < 0 || static_cast<size_t>(id) >= t.idFlags.size() || !(t.idFlags[id] & Impl::Present))
            throw TokenizerError("id " + std::to_string(id) + " is not a token of " + t.source + " (ids 0 to " +
                                 std::to_string(t.idFlags.size() - 1) + ")");
        if (skipSpecialTokens && (t.idFlags[id] & Impl::Special))
            continue;
        const uint32_t begin = id == 0 ? 0 : t.decodedEnd[id - 1];
        bytes.append(t.decoded, begin, t.decodedEnd[id] - begin);
    }
    return isValidUtf8(bytes) ? bytes : repairUtf8(bytes);
}

std::optional<int32_t> Tokenizer::tokenId(std::string_view token) const {
    const std::string key(token);
    if (const auto it = m_impl->addedIds.find(key); it != m_impl->addedIds.end())
        return it->second;
    const auto& vocab = m_impl->model->vocab();
    if (const auto it = vocab.find(key); it != vocab.end())
        return it->second;
    return std::nullopt;
}

int64_t Tokenizer::idCount() const { return static_cast<int64_t>(m_impl->idFlags.size()); }
const std::vector<AddedToken>& Tokenizer::addedTokens() const { return m_impl->added; }
size_t Tokenizer::vocabularySize() const { return m_impl->model->vocab().size(); }
size_t Tokenizer::mergeCount() const { return m_impl->model->mergeCount(); }
const std::string& Tokenizer::source() const { return m_impl->source; }

} // namespace parallax
