#include "core/spec/SpecFields.h"

#include "core/spec/ChoiceLabels.h"
#include "core/spec/ModelKinds.h"
#include "core/spec/ScheduleInfo.h"
#include "core/spec/TomlText.h"

#include <limits>

namespace parallax {

std::string SpecField::path() const {
    return section[0] == '\0' ? std::string(key) : std::string(section) + "." + key;
}

const std::vector<std::string>& specSections() {
    static const std::vector<std::string> sections = {"model", "finetune", "data", "train", "parallel", "launch", "telemetry",
                                                       "samples", "retention"};
    return sections;
}

FieldInfo FieldInfo::withRange(int64_t lo, int64_t hi) const {
    FieldInfo f = *this;
    f.minimum = lo;
    f.maximum = hi;
    return f;
}

FieldInfo FieldInfo::withExample(const char* text) const {
    FieldInfo f = *this;
    f.example = text;
    return f;
}

FieldInfo FieldInfo::withUnsetText(const char* text) const {
    FieldInfo f = *this;
    f.unsetText = text;
    return f;
}

FieldInfo FieldInfo::withOptions(std::vector<FieldOption> list) const {
    FieldInfo f = *this;
    f.options = std::move(list);
    return f;
}

FieldInfo FieldInfo::when(bool (*predicate)(const RunSpec&)) const {
    FieldInfo f = *this;
    f.relevant = predicate;
    return f;
}

FieldInfo offered(const char* label, const char* help) {
    FieldInfo f;
    f.label = label;
    f.help = help;
    return f;
}

bool fieldRelevant(const FieldInfo& info, const RunSpec& spec) {
    return info.relevant == nullptr || info.relevant(spec);
}

namespace {

// Which fields matter for a spec; the validator warns about the others when they are set.
bool imageModel(const RunSpec& s) {
    const ModelKindInfo* kind = modelKindInfo(s.model.kind);
    return kind == nullptr || kind->images;
}
bool visionTower(const RunSpec& s) {
    const ModelKindInfo* kind = modelKindInfo(s.model.kind);
    return kind != nullptr && kind->vision_tower;
}
// A published architecture (qwen2_5_vl, qwen2): model.from, [finetune], grouped-query attention.
bool published(const RunSpec& s) {
    const ModelKindInfo* kind = modelKindInfo(s.model.kind);
    return kind != nullptr && publishedModel(*kind);
}
bool latentModel(const RunSpec& s) {
    const ModelKindInfo* kind = modelKindInfo(s.model.kind);
    return kind != nullptr && readsLatents(*kind);
}
// Built of attention blocks (every kind but the VAE, whose architecture fixes heads, patch and the rest).
bool blockModel(const RunSpec& s) {
    const ModelKindInfo* kind = modelKindInfo(s.model.kind);
    return kind == nullptr || !reconstructsImages(*kind);
}
bool tokenModel(const RunSpec& s) {
    const ModelKindInfo* kind = modelKindInfo(s.model.kind);
    return kind == nullptr || hasVocabulary(*kind);
}
bool patchedImageModel(const RunSpec& s) { return imageModel(s) && blockModel(s); }
bool groupedQuery(const RunSpec& s) {
    const ModelKindInfo* kind = modelKindInfo(s.model.kind);
    return kind != nullptr && groupedQueryAttention(*kind);
}
bool lora(const RunSpec& s) { return published(s) && s.finetune.mode == FinetuneMode::Lora; }
bool conversationImages(const RunSpec& s) { return visionTower(s) && s.data.kind == DataKind::Conversations; }
bool conversations(const RunSpec& s) { return s.data.kind == DataKind::Conversations; }

// A closed choice's values with their labels (Choice.cpp).
template <class E>
std::vector<FieldOption> optionsOf() {
    const std::vector<std::string>& names = choiceNames<E>();
    const std::vector<std::string>& labels = choiceLabels<E>();
    std::vector<FieldOption> options;
    for (size_t i = 0; i < names.size(); ++i) options.push_back({names[i].c_str(), labels[i].c_str()});
    return options;
}

// Every model kind, with what it is ("gpt: decoder language model").
std::vector<FieldOption> modelKindOptions() {
    static const std::vector<std::string> labels = [] {
        std::vector<std::string> l;
        for (const ModelKindInfo& k : modelKinds()) l.push_back(std::string(k.name) + ": " + k.description);
        return l;
    }();
    std::vector<FieldOption> options;
    for (size_t i = 0; i < labels.size(); ++i) options.push_back({modelKinds()[i].name, labels[i].c_str()});
    return options;
}
bool interleaved(const RunSpec& s) {
    const ScheduleInfo* info = scheduleInfo(s.parallel.schedule);
    return info && info->chunked;
}
bool dataParallel(const RunSpec& s) { return s.parallel.dp > 1; }
bool recomputing(const RunSpec& s) { return s.train.activation_checkpointing; }
bool pipelined(const RunSpec& s) { return s.parallel.pp > 1 && !interleaved(s); }
bool onHosts(const RunSpec& s) { return s.launch.target == Target::Hosts; }
bool hostsListed(const RunSpec& s) { return onHosts(s) && s.launch.cluster.empty(); }
bool elastic(const RunSpec& s) { return onHosts(s) && s.launch.on_host_failure == OnHostFailure::Resume; }
bool onSlurm(const RunSpec& s) { return s.launch.target == Target::Slurm; }
bool hangFails(const RunSpec& s) { return s.telemetry.on_hang == OnHang::Fail; }
bool dataFromFiles(const RunSpec& s) { return s.data.kind != DataKind::Synthetic; }
bool drawsSamples(const RunSpec& s) { return latentModel(s) && s.samples.every > 0; }

FieldInfo dimension(const char* label, const char* help) {
    return offered(label, help).withRange(1);
}

const FieldInfo kNotOffered;

} // namespace

std::vector<SpecField> specFields(RunSpec& s) {
    ModelSpec& m = s.model;
    FinetuneSpec& f = s.finetune;
    DataSpec& d = s.data;
    TrainSpec& t = s.train;
    ParallelSpec& p = s.parallel;
    LaunchSpec& l = s.launch;
    TelemetrySpec& y = s.telemetry;
    SamplesSpec& a = s.samples;
    RetentionSpec& r = s.retention;
    const FieldInfo& no = kNotOffered;
    return {
        {"", "name", &s.name, offered("Run name", "Names the run in the store; runs of one name form a series").withExample("e.g. gpt-dp2")},

        {"model", "kind", &m.kind,
         offered("Kind").withOptions(modelKindOptions())},
        {"model", "from", &m.from,
         offered("From a folder", "A Hugging Face model folder (config.json, *.safetensors): its config gives the "
                                  "sizes and the run starts from its weights; empty: the preset, randomly initialized")
             .withExample("e.g. /models/Qwen2.5-VL-7B-Instruct")
             .when(published)},
        {"model", "preset", &m.preset, offered("Preset", "Gives every dimension; a dimension set here overrides it")},
        {"model", "layers", &m.layers,
         dimension("Layers",
                   "Transformer blocks (qwen_image: dual-stream blocks; qwen_image_vae: residual blocks a stage)")},
        {"model", "dim", &m.dim,
         dimension("Width (dim)", "Hidden width of every block (qwen_image_vae: the first stage's channels)")},
        {"model", "heads", &m.heads,
         dimension("Heads", "Attention heads; the width must divide by them").when(blockModel)},
        {"model", "kv_heads", &m.kv_heads,
         dimension("Key/value heads", "Grouped-query attention: heads of keys and values; the heads must divide by "
                                      "them")
             .when(groupedQuery)},
        {"model", "ffn", &m.ffn, dimension("FFN width", "Hidden width of each feed-forward block").when(blockModel)},
        {"model", "vocab", &m.vocab, dimension("Vocabulary", "Tokens the embedding and the output know").when(tokenModel)},
        {"model", "seq_len", &m.seq_len,
         dimension("Sequence length", "gpt: context; qwen_image: prompt states").when(blockModel)},
        {"model", "image_size", &m.image_size, dimension("Image size", "Side of the (latent) image in pixels").when(imageModel)},
        {"model", "channels", &m.channels, dimension("Channels", "Channels of the (latent) image").when(imageModel)},
        {"model", "patch", &m.patch, dimension("Patch", "Side of one image token in pixels").when(patchedImageModel)},
        {"model", "vision_layers", &m.vision_layers, dimension("Vision layers", "Blocks of the vision tower").when(visionTower)},
        {"model", "vision_dim", &m.vision_dim, dimension("Vision width", "Hidden width of the vision tower").when(visionTower)},
        {"model", "vision_heads", &m.vision_heads, dimension("Vision heads", "Attention heads of the vision tower").when(visionTower)},
        {"model", "vision_ffn", &m.vision_ffn,
         dimension("Vision MLP width", "Hidden width of the vision tower's SwiGLU").when(visionTower)},
        {"model", "text_dim", &m.text_dim,
         dimension("Prompt width", "Width of the text encoder's states the transformer reads").when(latentModel)},

        {"finetune", "mode", &f.mode,
         offered("Fine-tuning", "full: every weight of the parts not frozen trains; lora: only LoRA adapters (and the "
                                "modules to save) train")
             .withOptions(optionsOf<FinetuneMode>())
             .when(published)},
        {"finetune", "freeze_vision", &f.freeze_vision,
         offered("Freeze vision tower", "The patch embedding and the vision blocks hold no gradient (lora: and get no "
                                        "adapters)")
             .when(visionTower)},
        {"finetune", "freeze_merger", &f.freeze_merger,
         offered("Freeze merger", "The merger, which projects image features into the language model, holds no "
                                  "gradient (lora: and gets no adapters)")
             .when(visionTower)},
        {"finetune", "freeze_llm", &f.freeze_llm,
         offered("Freeze language model", "The embedding, decoder layers and head hold no gradient (lora: and get no "
                                          "adapters)")
             .when(published)},
        {"finetune", "lora_r", &f.lora_r,
         offered("LoRA rank", "r: an adapter adds r × (in + out) parameters to its Linear").withRange(1, 65536).when(lora)},
        {"finetune", "lora_alpha", &f.lora_alpha,
         offered("LoRA alpha", "Adapters scale by alpha / r (alpha / √r with rsLoRA)").withExample("16").when(lora)},
        {"finetune", "lora_dropout", &f.lora_dropout,
         offered("LoRA dropout", "Dropout on each adapter's input, in [0, 1)").withExample("0.05").when(lora)},
        {"finetune", "rslora", &f.rslora, offered("rsLoRA", "Rank-stabilized scale: alpha / √r").when(lora)},
        {"finetune", "lora_targets", &f.lora_targets,
         offered("LoRA targets", "Linears to adapt, by name, one per line: q_proj, k_proj, v_proj, o_proj, gate_proj, "
                                 "up_proj, down_proj; the tower's qkv, proj (with its part not frozen)")
             .when(lora)},
        {"finetune", "modules_to_save", &f.modules_to_save,
         offered("Modules to save", "Modules trained whole beside the adapters, one per line: embed_tokens, lm_head, "
                                    "merger")
             .when(lora)},

        {"data", "kind", &d.kind,
         offered("Kind").withOptions(optionsOf<DataKind>())},
        {"data", "path", &d.path, offered("Path", "Dataset folder or file; empty: the kind's default")},
        {"data", "shuffle", &d.shuffle, offered("Shuffle", "A new order of the samples every epoch")},
        {"data", "on_bad_sample", &d.on_bad_sample,
         offered("Bad sample", "A sample that cannot be read (a corrupt or truncated image): fail the run naming it, "
                               "or skip it and count it")
             .withOptions(optionsOf<OnBadSample>())
             .when(dataFromFiles)},
        {"data", "max_pixels", &d.max_pixels,
         offered("Max pixels per image", "Larger images are resized down (aspect kept, sides multiples of 28); 784 "
                                         "pixels make one visual token: the first lever against running out of memory")
             .withRange(784, int64_t(1) << 30)
             .when(visionTower)},
        {"data", "min_pixels", &d.min_pixels,
         offered("Min pixels per image", "Smaller images are resized up to at least this many pixels")
             .withRange(1, int64_t(1) << 30)
             .when(conversationImages)},
        {"data", "on_truncate", &d.on_truncate,
         offered("Sample too long", "A sample longer than model.seq_len whose cut would fall inside an image: drop "
                                    "it and count it, or refuse the run")
             .withOptions(optionsOf<OnTruncate>())
             .when(conversations)},

        {"train", "steps", &t.steps, offered("Steps", "Optimizer steps of the run").withRange(1)},
        {"train", "global_batch", &t.global_batch,
         offered("Global batch", "Samples per optimizer step over all replicas: dp × micro-batch × accumulation").withRange(1)},
        {"train", "micro_batch", &t.micro_batch, offered("Micro-batch", "Samples per forward/backward on one replica").withRange(1)},
        {"train", "lr", &t.lr, offered("Learning rate", "Peak of the cosine schedule").withExample("3e-4")},
        {"train", "min_lr", &t.min_lr, offered("Minimum LR", "Floor of the cosine decay").withExample("0")},
        {"train", "warmup", &t.warmup, offered("Warm-up steps", "Steps of linear warm-up to the learning rate")},
        {"train", "weight_decay", &t.weight_decay, offered("Weight decay", "AdamW's decoupled weight decay").withExample("0.1")},
        {"train", "beta1", &t.beta1, no},
        {"train", "beta2", &t.beta2, no},
        {"train", "eps", &t.eps, no},
        {"train", "precision", &t.precision,
         offered("Precision", "Of the weights' copies the layers compute with; the master weights stay fp32")
             .withOptions(optionsOf<Precision>())},
        {"train", "grad_clip", &t.grad_clip,
         offered("Gradient clip", "Maximum global gradient norm; 0 disables clipping").withExample("1.0")},
        {"train", "seed", &t.seed, offered("Seed", "Of the weights and the data order").withExample("42")},
        {"train", "checkpoint_every", &t.checkpoint_every,
         offered("Checkpoint every", "Steps between checkpoints; at stop and at the end only when none")
             .withUnsetText("at the end only")},
        {"train", "activation_checkpointing", &t.activation_checkpointing,
         offered("Activation checkpointing", "Recompute activations in backward: less memory, about a third more compute")},
        {"train", "recompute_blocks", &t.recompute_blocks,
         offered("Recomputed blocks", "Of each pipeline stage's blocks that train, the first this many are recomputed in "
                                      "backward; the others keep their activations: faster, more memory")
             .withRange(0)
             .withUnsetText("every block")
             .when(recomputing)},

        {"parallel", "dp", &p.dp,
         offered("Data parallel (dp)", "Replicas of the model, each on its share of the batch").withRange(1, 65536)},
        {"parallel", "tp", &p.tp,
         offered("Tensor parallel (tp)", "Ranks that split each layer's heads and FFN width").withRange(1, 1024)},
        {"parallel", "pp", &p.pp, offered("Pipeline parallel (pp)", "Stages the layers are divided among").withRange(1, 1024)},
        {"parallel", "zero", &p.zero,
         offered("ZeRO stage", "What the data-parallel replicas shard among themselves")
             .withOptions({{"0", "0: off"},
                           {"1", "1: shard optimizer states"},
                           {"2", "2: + gradients"},
                           {"3", "3: + weights (FSDP)"}})},
        {"parallel", "schedule", &p.schedule,
         offered("Pipeline schedule", "Order of the micro-batches' forward and backward passes on the stages")
             .withOptions(optionsOf<Schedule>())},
        {"parallel", "virtual_stages", &p.virtual_stages,
         offered("Virtual stages", "Model chunks per pipeline rank (interleaved schedule)").withRange(1, 1024).when(interleaved)},
        {"parallel", "stage_layers", &p.stage_layers, no},
        {"parallel", "stage_split", &p.stage_split,
         offered("Stage split", "How the blocks are divided among pipeline stages: by FLOPs, or by each unit's "
                                "time measured in a short probe run on the target first")
             .withOptions(optionsOf<StageSplit>())
             .when(pipelined)},
        {"parallel", "bucket_mb", &p.bucket_mb,
         offered("Gradient bucket (MiB)", "Gradients reduced together while backward goes on").withExample("25")},
        {"parallel", "reduce_dtype", &p.reduce_dtype,
         offered("Reduce in", "Type of the gradient reduction: bf16 halves its traffic (cuda)")
             .withOptions(optionsOf<Precision>())
             .when(dataParallel)},

        {"launch", "target", &l.target,
         offered("Where").withOptions(optionsOf<Target>())},
        {"launch", "device", &l.device, offered("Device").withOptions(optionsOf<Device>())},
        {"launch", "processes", &l.processes,
         offered("Processes", "Leave at dp × tp × pp unless the launcher needs the count spelled out")
             .withRange(0, 1 << 20)
             .withUnsetText("dp × tp × pp")},
        {"launch", "cluster", &l.cluster,
         offered("Cluster", "A cluster profile names the hosts and how ssh reaches them (see the Cluster page)").when(onHosts)},
        {"launch", "hosts", &l.hosts, offered("Hosts", "One \"name:slots\" per line").withExample("node1:8\nnode2:8").when(hostsListed)},
        {"launch", "host_timeout_s", &l.host_timeout_s,
         offered("Host timeout (s)", "A host silent this long fails the run (or is left out, on resume)").withRange(5).when(onHosts)},
        {"launch", "exclude_hosts", &l.exclude_hosts,
         offered("Leave out hosts", "Hosts of the list or the profile this run does not use, one per line").when(onHosts)},
        {"launch", "on_host_failure", &l.on_host_failure,
         offered("When a host fails", "Fail the run, or resume from the newest checkpoint on the hosts that answer")
             .withOptions(optionsOf<OnHostFailure>())
             .when(onHosts)},
        {"launch", "min_hosts", &l.min_hosts,
         offered("Resume on at least", "Hosts a resumed run needs").withRange(1).when(elastic)},
        {"launch", "max_restarts", &l.max_restarts,
         offered("Restarts at most", "Resumes after failures before the run fails").withRange(0).when(elastic)},
        {"launch", "bind", &l.bind,
         offered("Bind ranks to").withOptions(optionsOf<Bind>())},
        {"launch", "mpirun_args", &l.mpirun_args, no},
        {"launch", "slurm_mode", &l.slurm_mode,
         offered("Slurm job", "srun: the job ends with the console's supervisor; batch: sbatch, the job outlives it")
             .withOptions(optionsOf<SlurmMode>())
             .when(onSlurm)},
        {"launch", "partition", &l.partition, offered("Partition").withExample("the cluster's default").when(onSlurm)},
        {"launch", "account", &l.account, offered("Account").withExample("your default account").when(onSlurm)},
        {"launch", "qos", &l.qos, offered("QOS").withExample("the account's default").when(onSlurm)},
        {"launch", "constraint", &l.constraint, offered("Constraint", "Node features, as sbatch --constraint").when(onSlurm)},
        {"launch", "time_limit", &l.time_limit, offered("Time limit").withExample("HH:MM:SS, empty: the partition's").when(onSlurm)},
        {"launch", "nodes", &l.nodes, offered("Nodes").withUnsetText("as Slurm places the tasks").when(onSlurm)},
        {"launch", "tasks_per_node", &l.tasks_per_node,
         offered("Tasks per node").withUnsetText("as Slurm places them").when(onSlurm)},
        {"launch", "gpus_per_node", &l.gpus_per_node, offered("GPUs per node").withRange(0, 1024).when(onSlurm)},
        {"launch", "signal_margin_s", &l.signal_margin_s,
         offered("Checkpoint before the limit (s)", "USR1 this long before the time limit: the ranks checkpoint")
             .when(onSlurm)},
        {"launch", "threads_per_rank", &l.threads_per_rank,
         offered("Threads per rank", "auto: the node's cores divided among its ranks").withRange(0, 4096).withUnsetText("auto")},
        {"launch", "env", &l.env, no},
        {"launch", "forward_env", &l.forward_env, no},

        {"telemetry", "device_sample_ms", &y.device_sample_ms,
         offered("Device sample (ms)", "Interval of the GPU and process samples").withRange(50)},
        {"telemetry", "span_every", &y.span_every,
         offered("Pipeline spans every", "Record forward/backward spans every N steps (0: never)")},
        {"telemetry", "step_every", &y.step_every, offered("Step event every", "Emit a step's metrics every N steps").withRange(1)},
        {"telemetry", "flight_recorder", &y.flight_recorder,
         offered("Flight recorder", "Record every collective, heartbeats and step times: names hangs and stragglers")},
        {"telemetry", "hang_after_s", &y.hang_after_s,
         offered("Hang after (s)", "No step for this long (or 5 × the median step): the hang is named").withRange(1)},
        {"telemetry", "on_hang", &y.on_hang,
         offered("On a hang").withOptions(optionsOf<OnHang>())},
        {"telemetry", "hang_timeout_s", &y.hang_timeout_s,
         offered("Hang timeout (s)", "A hang this long ends every rank").withRange(1).when(hangFails)},
        {"telemetry", "unit_times", &y.unit_times, no},
        {"telemetry", "collective_times", &y.collective_times, no},

        {"samples", "every", &a.every,
         offered("Samples every", "Draw images every N steps from the dataset's first prompts (0: never)")
             .withRange(0)
             .withUnsetText("never")
             .when(latentModel)},
        {"samples", "count", &a.count,
         offered("Images", "One for each of the dataset's first samples: its prompt, its size, seed train.seed + its index")
             .withRange(1, 16)
             .when(drawsSamples)},
        {"samples", "steps", &a.steps,
         offered("Sampler steps", "Denoising steps of each image").withRange(2, 200).when(drawsSamples)},

        {"retention", "output_segment_mb", &r.output_segment_mb, no},
        {"retention", "output_keep_mb", &r.output_keep_mb, no},
        {"retention", "raw_telemetry_minutes", &r.raw_telemetry_minutes, no},
        {"retention", "disk_budget_gb", &r.disk_budget_gb, no},
    };
}

const FieldInfo* specFieldInfo(const std::string& path) {
    static const std::vector<std::pair<std::string, FieldInfo>> infos = [] {
        RunSpec spec;
        std::vector<std::pair<std::string, FieldInfo>> out;
        for (const SpecField& f : specFields(spec)) out.emplace_back(f.path(), f.info);
        return out;
    }();
    for (const auto& [p, info] : infos)
        if (p == path) return &info;
    return nullptr;
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
