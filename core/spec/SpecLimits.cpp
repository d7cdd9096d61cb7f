#include "core/spec/SpecLimits.h"

namespace parallax {

namespace {

constexpr int64_t pow2(int exponent) { return int64_t(1) << exponent; }

} // namespace

const std::vector<FieldLimit>& fieldLimits() {
    static const std::vector<FieldLimit> limits = {
        {"model.layers", pow2(14), "the deepest transformers trained have about a thousand blocks"},
        {"model.dim", pow2(20), "the widest models are a few tens of thousands wide"},
        {"model.kv_heads", pow2(20), "the widest models are a few tens of thousands wide"},
        {"model.ffn", pow2(22), "the widest MLPs are a few hundred thousand wide"},
        {"model.vocab", pow2(24), "the largest vocabularies have about a million tokens"},
        {"model.seq_len", pow2(24), "that is 16 million tokens per sample"},
        {"model.image_size", pow2(16), "that is a 65536 x 65536 image"},
        {"model.channels", pow2(10), "images and latents have at most a few dozen channels"},
        {"model.patch", pow2(10), "patches are a few pixels wide"},
        {"model.vision_layers", pow2(14), "the deepest transformers trained have about a thousand blocks"},
        {"model.vision_dim", pow2(20), "the widest models are a few tens of thousands wide"},
        {"model.vision_ffn", pow2(22), "the widest MLPs are a few hundred thousand wide"},
        {"model.text_dim", pow2(20), "the widest text encoders are a few tens of thousands wide"},
        {"finetune.lora_r", pow2(16), "adapters of a rank above a few hundred are full fine-tuning in disguise"},
        {"data.max_pixels", pow2(30), "that is an image of 32768 x 32768 pixels"},
        {"data.min_pixels", pow2(30), "that is an image of 32768 x 32768 pixels"},
        {"train.steps", pow2(40), "that is a trillion optimizer steps"},
        {"train.global_batch", pow2(24), "the largest batches hold a few thousand samples"},
        {"train.micro_batch", pow2(24), "the largest batches hold a few thousand samples"},
        {"train.warmup", pow2(40), "that is a trillion optimizer steps"},
        {"parallel.dp", kMaxProcesses, "the largest training runs use about a hundred thousand processes"},
        {"parallel.tp", kMaxProcesses, "the largest training runs use about a hundred thousand processes"},
        {"parallel.pp", kMaxProcesses, "the largest training runs use about a hundred thousand processes"},
        {"parallel.virtual_stages", pow2(14), "every model chunk holds at least one block"},
        {"launch.processes", kMaxProcesses, "the largest training runs use about a hundred thousand processes"},
        {"launch.threads_per_rank", pow2(12), "no node has that many cores for one rank"},
        {"launch.host_timeout_s", 86400, "a host silent for a day is gone"},
        {"launch.min_hosts", pow2(20), "the largest machines have about a hundred thousand nodes"},
        {"launch.max_restarts", 1000, "a run lost a thousand times needs its hosts mended, not restarts"},
        {"launch.nodes", pow2(20), "the largest machines have about a hundred thousand nodes"},
        {"launch.tasks_per_node", pow2(12), "no node has that many cores for one rank each"},
        {"launch.signal_margin_s", 86400, "a checkpoint does not take a day"},
        {"telemetry.device_sample_ms", 3600000, "that is one sample an hour"},
        {"telemetry.hang_after_s", 86400, "a step that takes a day is a hang"},
        {"telemetry.hang_timeout_s", 604800, "a hang a week old will not end by itself"},
        {"retention.output_segment_mb", pow2(20), "a segment of a terabyte is no segment"},
        {"retention.output_keep_mb", pow2(30), "no run folder holds a petabyte of output"},
        {"retention.raw_telemetry_minutes", 525600, "that is a year"},
    };
    return limits;
}

const FieldLimit* fieldLimit(const std::string& field) {
    for (const FieldLimit& limit : fieldLimits())
        if (field == limit.field) return &limit;
    return nullptr;
}

std::string limitText(int64_t most) {
    for (int exponent = 11; exponent < 63; ++exponent)
        if (most == pow2(exponent)) return std::to_string(most) + " (2^" + std::to_string(exponent) + ")";
    return std::to_string(most);
}

std::string countProblem(const std::string& field, int64_t value, int64_t minimum) {
    if (value < minimum)
        return field + " = " + std::to_string(value) + " must be at least " + std::to_string(minimum);
    const FieldLimit* limit = fieldLimit(field);
    if (limit && value > limit->most)
        return field + " = " + std::to_string(value) + " is more than " + limitText(limit->most) +
               ", the most Parallax accepts (" + limit->reason + ")";
    return "";
}

} // namespace parallax
