#include "core/store/SpanChunk.h"
#include "core/store/PackedBytes.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace parallax {

namespace {

using packed::get;
using packed::put;

constexpr uint8_t kFormat = 1;
constexpr size_t kFixed = 4 + 4 + 8 + 8 + 1; // stage, microbatch, start, end, kind length

} // namespace

std::string SpanChunk::encode(const std::vector<const SpanEvent*>& spans) {
    size_t bytes = 1;
    for (const SpanEvent* s : spans) bytes += kFixed + std::min<size_t>(s->kind.size(), 255);
    std::string out(bytes, '\0');
    char* at = out.data();
    at = put<uint8_t>(at, kFormat);
    for (const SpanEvent* s : spans) {
        const size_t kind = std::min<size_t>(s->kind.size(), 255);
        at = put<int32_t>(at, s->stage);
        at = put<int32_t>(at, s->microbatch);
        at = put<double>(at, s->start);
        at = put<double>(at, s->end);
        at = put<uint8_t>(at, static_cast<uint8_t>(kind));
        std::memcpy(at, s->kind.data(), kind);
        at += kind;
    }
    return out;
}

void SpanChunk::decode(const void* data, size_t bytes, int64_t step, int rank, std::vector<SpanEvent>& out) {
    const auto* p = static_cast<const unsigned char*>(data);
    if (bytes < 1 || p[0] != kFormat) throw std::runtime_error("a spans chunk has no valid header");
    const unsigned char* at = p + 1;
    const unsigned char* end = p + bytes;
    while (at < end) {
        if (static_cast<size_t>(end - at) < kFixed) throw std::runtime_error("a spans chunk is truncated");
        SpanEvent s;
        s.step = step;
        s.rank = rank;
        s.stage = get<int32_t>(at);
        s.microbatch = get<int32_t>(at + 4);
        s.start = get<double>(at + 8);
        s.end = get<double>(at + 16);
        const size_t kind = at[24];
        at += kFixed;
        if (static_cast<size_t>(end - at) < kind) throw std::runtime_error("a spans chunk is truncated");
        s.kind.assign(reinterpret_cast<const char*>(at), kind);
        at += kind;
        out.push_back(std::move(s));
    }
}

} // namespace parallax
