#include "core/store/MetricChunk.h"
#include "core/store/PackedBytes.h"

#include <cstring>
#include <stdexcept>

namespace parallax {

namespace {

using packed::get;
using packed::put;

constexpr uint8_t kFormat = 1;
constexpr uint16_t kFields = 14;
constexpr size_t kHeader = 4;

} // namespace

std::string MetricChunk::encode(const StepEvent* rows, size_t count) {
    std::string out(kHeader + count * kFields * 8, '\0');
    char* at = out.data();
    at = put<uint8_t>(at, kFormat);
    at = put<uint8_t>(at, 0);
    at = put<uint16_t>(at, kFields);
    for (size_t i = 0; i < count; ++i) {
        const StepEvent& e = rows[i];
        at = put<int64_t>(at, e.step);
        at = put<double>(at, e.t);
        at = put<double>(at, e.loss);
        at = put<double>(at, e.lr);
        at = put<double>(at, e.grad_norm);
        at = put<double>(at, e.tokens_per_s);
        at = put<double>(at, e.samples_per_s);
        at = put<double>(at, e.step_ms);
        at = put<double>(at, e.step_ms_min);
        at = put<double>(at, e.step_ms_max);
        at = put<int64_t>(at, e.slowest_rank);
        at = put<double>(at, e.mfu);
        at = put<int64_t>(at, e.tokens);
        at = put<double>(at, e.peak_mem);
    }
    return out;
}

void MetricChunk::decode(const void* data, size_t bytes, std::vector<StepEvent>& out) {
    const auto* p = static_cast<const unsigned char*>(data);
    if (bytes < kHeader || p[0] < 1) throw std::runtime_error("a metrics chunk has no valid header");
    const size_t fields = get<uint16_t>(p + 2);
    if (fields < kFields) throw std::runtime_error("a metrics chunk has too few fields per step");
    const size_t record = fields * 8;
    if ((bytes - kHeader) % record != 0) throw std::runtime_error("a metrics chunk is truncated");
    for (const unsigned char* r = p + kHeader; r < p + bytes; r += record) {
        StepEvent e;
        e.step = get<int64_t>(r);
        e.t = get<double>(r + 8);
        e.loss = get<double>(r + 16);
        e.lr = get<double>(r + 24);
        e.grad_norm = get<double>(r + 32);
        e.tokens_per_s = get<double>(r + 40);
        e.samples_per_s = get<double>(r + 48);
        e.step_ms = get<double>(r + 56);
        e.step_ms_min = get<double>(r + 64);
        e.step_ms_max = get<double>(r + 72);
        e.slowest_rank = static_cast<int>(get<int64_t>(r + 80));
        e.mfu = get<double>(r + 88);
        e.tokens = get<int64_t>(r + 96);
        e.peak_mem = get<double>(r + 104);
        out.push_back(e);
    }
}

} // namespace parallax
