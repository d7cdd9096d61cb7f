#include "core/spec/SpecFields.h"

#include "core/spec/TomlText.h"

#include <limits>

namespace parallax {

std::string SpecField::path() const {
    return section[0] == '\0' ? std::string(key) : std::string(section) + "." + key;
}

const std::vector<std::string>& specSections() {
    static const std::vector<std::string> sections = {"model", "data", "train", "parallel", "launch", "telemetry"};
    return sections;
}

std::vector<SpecField> specFields(RunSpec& s) {
    ModelSpec& m = s.model;
    DataSpec& d = s.data;
    TrainSpec& t = s.train;
    ParallelSpec& p = s.parallel;
    LaunchSpec& l = s.launch;
    TelemetrySpec& y = s.telemetry;
    return {
        {"", "name", &s.name},

        {"model", "kind", &m.kind},
        {"model", "preset", &m.preset},
        {"model", "layers", &m.layers},
        {"model", "dim", &m.dim},
        {"model", "heads", &m.heads},
        {"model", "ffn", &m.ffn},
        {"model", "vocab", &m.vocab},
        {"model", "seq_len", &m.seq_len},
        {"model", "image_size", &m.image_size},
        {"model", "channels", &m.channels},
        {"model", "patch", &m.patch},
        {"model", "vision_layers", &m.vision_layers},
        {"model", "vision_dim", &m.vision_dim},
        {"model", "vision_heads", &m.vision_heads},
        {"model", "freeze_vision", &m.freeze_vision},

        {"data", "kind", &d.kind},
        {"data", "path", &d.path},
        {"data", "shuffle", &d.shuffle},

        {"train", "steps", &t.steps},
        {"train", "global_batch", &t.global_batch},
        {"train", "micro_batch", &t.micro_batch},
        {"train", "lr", &t.lr},
        {"train", "min_lr", &t.min_lr},
        {"train", "warmup", &t.warmup},
        {"train", "weight_decay", &t.weight_decay},
        {"train", "beta1", &t.beta1},
        {"train", "beta2", &t.beta2},
        {"train", "eps", &t.eps},
        {"train", "precision", &t.precision},
        {"train", "grad_clip", &t.grad_clip},
        {"train", "seed", &t.seed},
        {"train", "checkpoint_every", &t.checkpoint_every},
        {"train", "activation_checkpointing", &t.activation_checkpointing},

        {"parallel", "dp", &p.dp},
        {"parallel", "tp", &p.tp},
        {"parallel", "pp", &p.pp},
        {"parallel", "zero", &p.zero},
        {"parallel", "schedule", &p.schedule},
        {"parallel", "virtual_stages", &p.virtual_stages},
        {"parallel", "stage_layers", &p.stage_layers},
        {"parallel", "bucket_mb", &p.bucket_mb},
        {"parallel", "reduce_dtype", &p.reduce_dtype},

        {"launch", "target", &l.target},
        {"launch", "device", &l.device},
        {"launch", "processes", &l.processes},
        {"launch", "hosts", &l.hosts},
        {"launch", "cluster", &l.cluster},
        {"launch", "host_timeout_s", &l.host_timeout_s},
        {"launch", "exclude_hosts", &l.exclude_hosts},
        {"launch", "on_host_failure", &l.on_host_failure},
        {"launch", "min_hosts", &l.min_hosts},
        {"launch", "max_restarts", &l.max_restarts},
        {"launch", "bind", &l.bind},
        {"launch", "mpirun_args", &l.mpirun_args},
        {"launch", "slurm_mode", &l.slurm_mode},
        {"launch", "partition", &l.partition},
        {"launch", "account", &l.account},
        {"launch", "qos", &l.qos},
        {"launch", "constraint", &l.constraint},
        {"launch", "time_limit", &l.time_limit},
        {"launch", "nodes", &l.nodes},
        {"launch", "tasks_per_node", &l.tasks_per_node},
        {"launch", "gpus_per_node", &l.gpus_per_node},
        {"launch", "signal_margin_s", &l.signal_margin_s},
        {"launch", "threads_per_rank", &l.threads_per_rank},
        {"launch", "env", &l.env},
        {"launch", "forward_env", &l.forward_env},

        {"telemetry", "device_sample_ms", &y.device_sample_ms},
        {"telemetry", "span_every", &y.span_every},
        {"telemetry", "step_every", &y.step_every},
        {"telemetry", "flight_recorder", &y.flight_recorder},
        {"telemetry", "hang_after_s", &y.hang_after_s},
        {"telemetry", "on_hang", &y.on_hang},
        {"telemetry", "hang_timeout_s", &y.hang_timeout_s},
    };
}

const std::vector<std::string>& specFieldPaths() {
    static const std::vector<std::string> paths = [] {
        RunSpec spec;
        std::vector<std::string> out;
        for (const SpecField& f : specFields(spec)) out.push_back(f.path());
        return out;
    }();
    return paths;
}

namespace {

template <class... F>
struct Overloaded : F... {
    using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

} // namespace

std::string fieldValueText(const SpecFieldRef& ref) {
    return std::visit(
        Overloaded{
            [](std::string* v) { return tomlString(*v); },
            [](ChoiceField* v) { return tomlString(v->name()); },
            [](bool* v) { return std::string(*v ? "true" : "false"); },
            [](int64_t* v) { return std::to_string(*v); },
            [](uint64_t* v) {
                // TOML integers are signed 64-bit; larger values travel as a decimal string.
                return *v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? std::to_string(*v)
                                                                                        : tomlString(std::to_string(*v));
            },
            [](double* v) { return tomlDouble(*v); },
            [](std::optional<int64_t>* v) { return *v ? std::to_string(**v) : std::string(); },
            [](std::vector<int64_t>* v) {
                std::string out = "[";
                for (size_t i = 0; i < v->size(); ++i) out += (i ? ", " : "") + std::to_string((*v)[i]);
                return out + "]";
            },
            [](std::vector<std::string>* v) {
                std::string out = "[";
                for (size_t i = 0; i < v->size(); ++i) out += (i ? ", " : "") + tomlString((*v)[i]);
                return out + "]";
            },
            [](std::map<std::string, std::string>* v) {
                if (v->empty()) return std::string("{}");
                std::string out = "{ ";
                bool first = true;
                for (const auto& [k, val] : *v) {
                    out += (first ? "" : ", ") + tomlKey(k) + " = " + tomlString(val);
                    first = false;
                }
                return out + " }";
            },
        },
        ref);
}

} // namespace parallax
