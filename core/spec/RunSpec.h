#pragma once

#include "core/spec/CheckedMath.h"
#include "core/spec/Choice.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

// Model section. `preset` gives every dimension; any explicit field overrides it.
// Resolve to concrete numbers with resolveModel() (ModelDims.h).
struct ModelSpec {
    Choice<ModelKind> kind = ModelKind::Gpt;
    // A Hugging Face folder (config.json, safetensors): its config gives the kind's sizes, and the
    // run starts from its weights. Empty: the preset, randomly initialized.
    std::string from;
    std::string preset = "tiny"; // tiny | small | base | 1b | custom
    std::optional<int64_t> layers;
    std::optional<int64_t> dim;
    std::optional<int64_t> heads;
    std::optional<int64_t> kv_heads;  // grouped-query attention (qwen kinds)
    std::optional<int64_t> ffn;
    std::optional<int64_t> vocab;
    std::optional<int64_t> seq_len;   // gpt: context; qwen_image: prompt states
    // the image kinds' image side
    std::optional<int64_t> image_size;
    std::optional<int64_t> channels;
    std::optional<int64_t> patch;
    // qwen2_5_vl's vision tower
    std::optional<int64_t> vision_layers;
    std::optional<int64_t> vision_dim;
    std::optional<int64_t> vision_heads;
    std::optional<int64_t> vision_ffn; // the tower's MLP width
    std::optional<int64_t> text_dim;   // qwen_image: the width of the text encoder's states
};

struct DataSpec {
    Choice<DataKind> kind = DataKind::Synthetic;
    std::string path;               // dataset folder or file; empty = the kind's default
    bool shuffle = true;
    // A sample that cannot be read (an image corrupt, truncated or of a format not read): the run
    // fails naming it, or skips it and counts it.
    Choice<OnBadSample> on_bad_sample = OnBadSample::Fail;
    // conversations: each image is resized (aspect kept, sides multiples of 28) to at most
    // max_pixels and at least min_pixels; its visual tokens are pixels / 784.
    int64_t max_pixels = 768 * 768;
    int64_t min_pixels = 32 * 32;
    // A sample longer than model.seq_len whose cut would fall inside an image: dropped and counted,
    // or the run refuses to start. (Text alone is cut at seq_len.)
    Choice<OnTruncate> on_truncate = OnTruncate::Drop;
};

// What a fine-tuning run of a published model (qwen2_5_vl, qwen2) trains. Frozen parameters hold
// no gradient and no optimizer state.
struct FinetuneSpec {
    // full: every weight of the parts not frozen trains. lora: every weight is frozen, and LoRA
    // adapters train on the Linears named in lora_targets within the parts not frozen.
    Choice<FinetuneMode> mode = FinetuneMode::Full;
    bool freeze_vision = true; // the vision tower: patch embedding and blocks
    bool freeze_merger = true; // the patch merger, which projects image features into the LM
    bool freeze_llm = false;   // the language model: embedding, decoder layers, final norm, head
    int64_t lora_r = 8;
    double lora_alpha = 16.0;  // adapters scale by alpha / r (alpha / sqrt(r) with rslora)
    double lora_dropout = 0.0;
    bool rslora = false;
    // Linears by the name the model declares (ModelTensors.h): every Linear of the language model.
    std::vector<std::string> lora_targets = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                             "down_proj"};
    // lora: modules trained whole beside the adapters ("embed_tokens", "lm_head", "merger").
    std::vector<std::string> modules_to_save;
};

struct TrainSpec {
    int64_t steps = 100;
    int64_t global_batch = 8;
    int64_t micro_batch = 4;
    double lr = 3e-4;
    double min_lr = 0.0;            // cosine floor
    int64_t warmup = 10;
    double weight_decay = 0.1;
    double beta1 = 0.9;
    double beta2 = 0.95;
    double eps = 1e-8;
    Choice<Precision> precision = Precision::Fp32;
    double grad_clip = 1.0;         // 0 disables clipping
    uint64_t seed = 42;
    int64_t checkpoint_every = 0;   // 0: only at stop and at the end
    bool activation_checkpointing = false;
    // With activation checkpointing, the blocks of each pipeline stage recomputed in backward: the
    // first this many that train (LoRA adapters count); the others keep their activations, less
    // compute for more memory. 0: every block.
    int64_t recompute_blocks = 0;
};

struct ParallelSpec {
    int64_t dp = 1;
    int64_t tp = 1;
    int64_t pp = 1;
    int64_t zero = 0;                // 0 | 1 | 2 | 3
    Choice<Schedule> schedule = Schedule::OneFOneB;
    int64_t virtual_stages = 1;      // model chunks per pipeline rank (interleaved only)
    std::vector<int64_t> stage_layers; // explicit layers per stage; empty = balanced by cost
    // How stage_layers is chosen when empty: by FLOPs, or by the units' times measured in a probe
    // on the target (parallax-cli balance; `run` probes first and records the split).
    Choice<StageSplit> stage_split = StageSplit::Flops;
    double bucket_mb = 25.0;
    Choice<Precision> reduce_dtype = Precision::Fp32; // of the gradient reduction
};

struct LaunchSpec {
    Choice<Target> target = Target::Local;
    Choice<Device> device = Device::Cpu;
    std::optional<int64_t> processes; // default dp*tp*pp
    std::vector<std::string> hosts;   // "node:slots" for target = hosts
    std::string cluster;              // target = hosts: a cluster profile's name or file (ClusterProfile.h)
    int64_t host_timeout_s = 30;      // target = hosts: a host silent this long fails the run
    std::vector<std::string> exclude_hosts; // target = hosts: hosts of launch.hosts or the profile left out
    // target = hosts: when a host is lost or a rank dies, fail, or resume from the newest checkpoint
    // as a new run on the hosts that answer (dp made to fit, the global batch kept), at least
    // min_hosts of them, at most max_restarts times.
    Choice<OnHostFailure> on_host_failure = OnHostFailure::Fail;
    int64_t min_hosts = 1;
    int64_t max_restarts = 3;
    Choice<Bind> bind = Bind::None;
    std::vector<std::string> mpirun_args; // extra launcher arguments, passed verbatim as argv entries
    std::map<std::string, std::string> env; // extra environment for every rank (kept in the spec)
    // Variables passed to every rank from the environment of the supervisor (parallax-cli, or the
    // console that starts it) by name: their values (tokens, keys) are kept nowhere.
    std::vector<std::string> forward_env;
    // slurm
    // srun: the supervisor runs srun and the job ends with it; batch: it submits the job with
    // sbatch and follows it, so the job outlives the supervisor and another one re-attaches.
    Choice<SlurmMode> slurm_mode = SlurmMode::Srun;
    std::string partition;
    std::string account;
    std::string qos;
    std::string constraint;
    std::string time_limit;          // HH:MM:SS
    int64_t nodes = 0;               // 0: as Slurm places the tasks
    int64_t tasks_per_node = 0;      // 0: as Slurm places them
    int64_t gpus_per_node = 0;
    int64_t signal_margin_s = 60;    // USR1 this long before the time limit: the ranks checkpoint
    int64_t threads_per_rank = 0;    // 0: cores / local ranks (at least 1)
};

struct TelemetrySpec {
    int64_t device_sample_ms = 500;
    int64_t span_every = 10;   // record pipeline spans every N steps (0: never)
    int64_t step_every = 1;    // emit a step event every N steps
    bool flight_recorder = true; // record every collective, heartbeats and per-rank step times (hangs, stragglers)
    int64_t hang_after_s = 30; // no step for max(this, 5 x the median step): the hang is named
    Choice<OnHang> on_hang = OnHang::Wait; // fail: after hang_timeout_s, ending every rank
    int64_t hang_timeout_s = 300;
    bool unit_times = false;   // after the last step, time each unit's forward and backward (unit_time events)
    bool collective_times = false; // after the last step, time all-reduces of a few sizes (collective_time events)
};

// Images drawn during a run (qwen_image): every `every` steps, one image for each of the dataset's
// first `count` samples, from its prompt's states at its latents' size and seed train.seed + its
// index, in `steps` denoising steps, decoded by model.from's VAE (docs/spec.md, [samples]).
struct SamplesSpec {
    int64_t every = 0;  // steps between samples (0: never)
    int64_t count = 2;  // images each time
    int64_t steps = 20; // the sampler's denoising steps
};

// What a run keeps on disk, and for how long (docs/spec.md, [retention]).
struct RetentionSpec {
    // The raw output (output.log.gz) is closed at this size (MiB, compressed) and continued in the
    // next segment (output.1.log.gz, output.2.log.gz...).
    int64_t output_segment_mb = 256;
    // Once the segments together pass this (MiB), the oldest ones whose lines are all in the store
    // are removed (never the one being written). 0: every segment is kept.
    int64_t output_keep_mb = 2048;
    // Raw device samples and rank steps are kept at full rate this long (minutes) before they are
    // folded per host.
    int64_t raw_telemetry_minutes = 60;
    // The run folder plus the run's share of the store past this (GiB): one warning alert. 0: none.
    double disk_budget_gb = 0;
};

struct RunSpec {
    std::string name = "run";
    ModelSpec model;
    FinetuneSpec finetune;
    DataSpec data;
    TrainSpec train;
    ParallelSpec parallel;
    LaunchSpec launch;
    TelemetrySpec telemetry;
    SamplesSpec samples;
    RetentionSpec retention;

    // Keys this version does not know, kept verbatim (as TOML text of the whole document) so that
    // reading and writing a spec never loses anything a newer version or a person added.
    std::string preserved_toml;

    // dp * tp * pp, clamped to the int64 range (a spec may hold any values: 2^62 * 4 is not 0).
    int64_t worldSize() const { return saturatingMul(saturatingMul(parallel.dp, parallel.tp), parallel.pp); }
    int64_t processCount() const { return launch.processes.value_or(worldSize()); }
    // Gradient-accumulation steps (= pipeline micro-batches per step); 0 when not integral (or when
    // dp * micro_batch does not fit in 64 bits).
    int64_t accumulation() const {
        const std::optional<int64_t> per = checkedMul(parallel.dp, train.micro_batch);
        return (per && *per > 0 && train.global_batch % *per == 0) ? train.global_batch / *per : 0;
    }
};

} // namespace parallax
