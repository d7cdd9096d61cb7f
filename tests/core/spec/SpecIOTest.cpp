#include "core/spec/SpecCompare.h"
#include "core/spec/SpecFields.h"
#include "core/spec/SpecIO.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <unistd.h>

namespace parallax {
namespace {

namespace fs = std::filesystem;

// Unknown keys at the top level, in known sections, in sub-tables of known sections, in arrays of
// tables and in a section of their own.
const char* kUnknownKeys = R"(
name = "ignored"
owner = "ml-team"
[model]
rope_theta = 10000.0
[data]
tokenizer = { kind = "bpe", merges = ["a b", "c d"] }
[train]
stpes = 10
betas_note = "kept as written"
[train.schedule_extra]
kind = "wsd"
decay_fraction = 0.2
[[train.phases]]
steps = 5
[[train.phases]]
steps = 7
lr = 1e-5
[launch]
container = "pytorch:24.01"
[telemetry.profiler]
enabled = true
when = 1979-05-27T07:32:00Z
[experiment]
tags = ["baseline", "fashion"]
)";

// A spec whose every field differs from the default, with unknown keys in several sections.
RunSpec fullSpec() {
    RunSpec s = parseSpec(kUnknownKeys, "full.toml");
    s.name = "full-spec.v2";
    ModelSpec& m = s.model;
    m.kind = ModelKind::Qwen2_5_Vl;
    m.preset = "custom";
    m.layers = 6;
    m.dim = 384;
    m.heads = 6;
    m.ffn = 1536;
    m.vocab = 50304;
    m.seq_len = 96;
    m.image_size = 56;
    m.channels = 3;
    m.patch = 7;
    m.vision_layers = 4;
    m.vision_dim = 192;
    m.vision_heads = 3;
    m.from = "/models/Qwen2.5-VL-7B-Instruct";
    m.kv_heads = 2;
    m.vision_ffn = 320;
    m.text_dim = 96;
    FinetuneSpec& f = s.finetune;
    f.mode = FinetuneMode::Lora;
    f.freeze_vision = false;
    f.freeze_merger = false;
    f.freeze_llm = true;
    f.lora_r = 16;
    f.lora_alpha = 32.5;
    f.lora_dropout = 0.05;
    f.rslora = true;
    f.lora_targets = {"qkv", "mlp.0"};
    f.modules_to_save = {"lm_head", "embed_tokens"};
    s.data.max_pixels = 1003520;
    s.data.min_pixels = 3136;
    s.data.on_truncate = OnTruncate::Fail;
    s.data.kind = DataKind::ImageFolder;
    s.data.path = "/data/captions \"v2\"";
    s.data.shuffle = false;
    s.data.on_bad_sample = OnBadSample::Skip;
    TrainSpec& t = s.train;
    t.steps = 12345;
    t.global_batch = 96;
    t.micro_batch = 3;
    t.lr = 6e-4;
    t.min_lr = 1.0 / 3.0;
    t.warmup = 250;
    t.weight_decay = 0.05;
    t.beta1 = 0.85;
    t.beta2 = 0.999;
    t.eps = 1e-10;
    t.precision = Precision::Bf16;
    t.grad_clip = 0.5;
    t.seed = std::numeric_limits<uint64_t>::max(); // above TOML's int64: travels as a string
    t.checkpoint_every = 500;
    t.activation_checkpointing = true;
    t.recompute_blocks = 7;
    ParallelSpec& p = s.parallel;
    p.dp = 4;
    p.tp = 2;
    p.pp = 3;
    p.zero = 2;
    p.schedule = Schedule::GPipe;
    p.virtual_stages = 2;
    p.stage_layers = {3, 4, 3};
    p.stage_split = StageSplit::Profile;
    p.bucket_mb = 12.5;
    p.reduce_dtype = Precision::Bf16;
    LaunchSpec& l = s.launch;
    l.target = Target::Slurm;
    l.device = Device::Cuda;
    l.processes = 24;
    l.hosts = {"node1:8", "node2:16"};
    l.cluster = "lab";
    l.host_timeout_s = 45;
    l.exclude_hosts = {"node2"};
    l.on_host_failure = OnHostFailure::Resume;
    l.min_hosts = 2;
    l.max_restarts = 5;
    l.bind = Bind::Socket;
    l.mpirun_args = {"--mca", "btl ^openib", "quote\" back\\slash\nnewline\ttab"};
    l.env = {{"NCCL_DEBUG", "INFO"}, {"OMP_NUM_THREADS", "4"}, {"weird.key name", "value = \"x\""}};
    l.forward_env = {"HF_TOKEN", "WANDB_API_KEY"};
    l.qos = "high";
    l.constraint = "h200";
    l.nodes = 2;
    l.tasks_per_node = 8;
    l.signal_margin_s = 120;
    l.slurm_mode = SlurmMode::Batch;
    l.partition = "gpu";
    l.account = "proj-42";
    l.time_limit = "1-12:00:00";
    l.gpus_per_node = 8;
    l.threads_per_rank = 6;
    s.telemetry.device_sample_ms = 250;
    s.telemetry.span_every = 0;
    s.telemetry.step_every = 5;
    s.telemetry.flight_recorder = false;
    s.telemetry.hang_after_s = 60;
    s.telemetry.on_hang = OnHang::Fail;
    s.telemetry.hang_timeout_s = 120;
    s.telemetry.unit_times = true;
    s.telemetry.collective_times = true;
    s.samples.every = 25;
    s.samples.count = 3;
    s.samples.steps = 8;
    s.retention.output_segment_mb = 64;
    s.retention.output_keep_mb = 1000;
    s.retention.raw_telemetry_minutes = 30;
    s.retention.disk_budget_gb = 1.0 / 3.0;
    return s;
}

TEST(SpecIO, FullSpecCoversEveryField) {
    // Guards the round-trip test below: a field added to RunSpec must be set in fullSpec().
    const RunSpec full = fullSpec();
    std::set<std::string> differing;
    for (const SpecDifference& d : specDifferences(full, RunSpec{})) differing.insert(d.field);
    for (const std::string& path : specFieldPaths()) EXPECT_TRUE(differing.count(path)) << path << " is left at its default";
}

TEST(SpecIO, EveryFieldAndUnknownKeysRoundTrip) {
    const RunSpec full = fullSpec();
    const std::string text = toToml(full);
    const RunSpec back = parseSpec(text, "written.toml");
    for (const SpecDifference& d : specDifferences(full, back))
        ADD_FAILURE() << d.field << ": wrote " << d.left << ", read back " << d.right << "\n" << text;
    EXPECT_TRUE(back == full);

    // Spot checks that do not rely on the comparison.
    EXPECT_EQ(back.train.seed, std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(back.train.lr, 6e-4);
    EXPECT_EQ(back.train.min_lr, 1.0 / 3.0);
    EXPECT_EQ(back.launch.mpirun_args, full.launch.mpirun_args);
    EXPECT_EQ(back.launch.env, full.launch.env);
    EXPECT_EQ(back.parallel.stage_layers, (std::vector<int64_t>{3, 4, 3}));
    EXPECT_EQ(back.model.vision_heads, std::optional<int64_t>(3));
    EXPECT_EQ(toToml(back), text); // writing is stable
}

TEST(SpecIO, UnknownKeysAreWrittenBackInTheirSections) {
    const RunSpec full = fullSpec();
    std::vector<SpecIssue> before;
    parseSpec(kUnknownKeys, "full.toml", before);
    std::vector<SpecIssue> after;
    parseSpec(toToml(full), "written.toml", after);
    std::vector<std::string> a, b;
    for (const SpecIssue& i : before) a.push_back(i.field);
    for (const SpecIssue& i : after) b.push_back(i.field);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    EXPECT_EQ(a, b);
    EXPECT_EQ(a, (std::vector<std::string>{"data.tokenizer", "experiment", "launch.container", "model.rope_theta", "owner",
                                           "telemetry.profiler", "train.betas_note", "train.phases",
                                           "train.schedule_extra", "train.stpes"}));

    const std::string text = toToml(full);
    // Kept keys sit in their own section, after the known ones.
    const size_t train = text.find("\n[train]\n");
    const size_t stpes = text.find("\nstpes = 10\n");
    const size_t parallel = text.find("\n[parallel]\n");
    ASSERT_NE(train, std::string::npos);
    ASSERT_NE(stpes, std::string::npos);
    EXPECT_LT(train, stpes);
    EXPECT_LT(stpes, parallel);
    EXPECT_NE(text.find("[[train.phases]]"), std::string::npos);
    EXPECT_NE(text.find("[train.schedule_extra]"), std::string::npos);
    EXPECT_NE(text.find("[telemetry.profiler]"), std::string::npos);
    EXPECT_NE(text.find("[experiment]"), std::string::npos);
    EXPECT_NE(text.find("owner = \"ml-team\""), std::string::npos);
}

TEST(SpecIO, ComparisonSeesEveryKindOfChange) {
    const RunSpec full = fullSpec();
    RunSpec other = full;
    EXPECT_TRUE(other == full);
    other.train.lr = std::nextafter(full.train.lr, 1.0); // one ulp away
    EXPECT_TRUE(other != full);
    auto diffs = specDifferences(full, other);
    ASSERT_EQ(diffs.size(), 1u);
    EXPECT_EQ(diffs[0].field, "train.lr");

    other = full;
    other.model.layers.reset();
    diffs = specDifferences(full, other);
    ASSERT_EQ(diffs.size(), 1u);
    EXPECT_EQ(diffs[0].field, "model.layers");
    EXPECT_EQ(diffs[0].left, "6");
    EXPECT_EQ(diffs[0].right, "");

    other = full;
    other.preserved_toml += "\n[train.more]\nx = 1\n";
    diffs = specDifferences(full, other);
    ASSERT_EQ(diffs.size(), 1u);
    EXPECT_EQ(diffs[0].field, "train.more.x");

    // Kept keys compare by value, not by layout.
    RunSpec a, b;
    a.preserved_toml = "[train]\nx = 1\ny = \"a\"\n";
    b.preserved_toml = "[train]\ny = 'a'   # same value\nx = 0x1\n";
    EXPECT_TRUE(a == b);
}

TEST(SpecIO, OptionalModelDimsAreWrittenOnlyWhenSet) {
    RunSpec s;
    EXPECT_EQ(toToml(s).find("layers"), std::string::npos);
    EXPECT_EQ(toToml(s).find("processes"), std::string::npos);
    EXPECT_EQ(toToml(s).find("partition"), std::string::npos);
    const RunSpec read = parseSpec("[model]\nkind = \"gpt\"\n");
    EXPECT_FALSE(read.model.layers.has_value());
    EXPECT_FALSE(read.model.vision_dim.has_value());
    EXPECT_FALSE(read.launch.processes.has_value());

    s.model.layers = 4;
    const std::string text = toToml(s);
    EXPECT_NE(text.find("\nlayers = 4\n"), std::string::npos);
    EXPECT_EQ(text.find("vision_dim"), std::string::npos);
    EXPECT_EQ(parseSpec(text).model.layers, std::optional<int64_t>(4));
}

TEST(SpecIO, FloatsRoundTripExactly) {
    const double values[] = {3e-4, 0.1, 1.0 / 3.0, 1e-8, 2.5e-5, 1.0, 25.0, 1e20, 123456789.0,
                             5e-324, 1.7976931348623157e308, 0.30000000000000004};
    for (double v : values) {
        RunSpec s;
        s.train.lr = v;
        s.parallel.bucket_mb = v;
        const RunSpec back = parseSpec(toToml(s));
        EXPECT_EQ(std::memcmp(&back.train.lr, &v, sizeof v), 0) << toToml(s);
        EXPECT_EQ(back.parallel.bucket_mb, v);
    }
    RunSpec s;
    s.train.lr = 3e-4;
    s.parallel.bucket_mb = 25;
    const std::string text = toToml(s);
    EXPECT_NE(text.find("lr = 3e-04\n"), std::string::npos) << text;
    EXPECT_NE(text.find("bucket_mb = 25.0\n"), std::string::npos) << text; // stays a float
    // Integers are accepted where a number is expected.
    EXPECT_EQ(parseSpec("[train]\nlr = 1\n").train.lr, 1.0);
}

TEST(SpecIO, ReadsTheDocumentedExample) {
    std::vector<SpecIssue> unknown;
    const RunSpec s = parseSpec(R"(name = "vae-fashion-dp2"

[model]
kind = "qwen_image_vae"   # gpt | qwen2_5_vl | qwen2 | qwen_image | qwen_image_vae
preset = "tiny"

[data]
kind = "fashion-mnist"

[train]
steps = 500
global_batch = 64
micro_batch = 8
lr = 3e-4
warmup = 50
precision = "fp32"
grad_clip = 1.0
seed = 42
checkpoint_every = 100

[parallel]
dp = 2
tp = 1
pp = 1
zero = 0
schedule = "1f1b"
bucket_mb = 25

[launch]
target = "local"
device = "cpu"
# hosts = ["node1:8", "node2:8"]

[launch.env]
OMP_PROC_BIND = "close"

[telemetry]
device_sample_ms = 500
span_every = 10
)",
                                "design.toml", unknown);
    EXPECT_TRUE(unknown.empty());
    EXPECT_EQ(s.name, "vae-fashion-dp2");
    EXPECT_EQ(s.model.kind, ModelKind::QwenImageVae);
    EXPECT_EQ(s.data.kind, DataKind::FashionMnist);
    EXPECT_EQ(s.train.steps, 500);
    EXPECT_EQ(s.train.global_batch, 64);
    EXPECT_EQ(s.train.lr, 3e-4);
    EXPECT_EQ(s.parallel.dp, 2);
    EXPECT_EQ(s.parallel.bucket_mb, 25.0);
    EXPECT_EQ(s.launch.env.at("OMP_PROC_BIND"), "close");
    EXPECT_EQ(s.telemetry.span_every, 10);
    EXPECT_EQ(s.accumulation(), 4);
    EXPECT_TRUE(s.preserved_toml.empty());
}

// A store keeps the spec of every run, also of a kind this program no longer has: such a spec reads,
// keeps its kind's name and fields as written and writes them back (the Runs page shows it; only
// validation refuses to start it).
TEST(SpecIO, ARetiredKindReadsAndWritesBackAsWritten) {
    std::vector<SpecIssue> unknown;
    const RunSpec s = parseSpec("name = \"mmdit-fashion-dp2\"\n[model]\nkind = \"mmdit\"\npreset = \"small\"\n"
                                "image_size = 28\npatch = 2\n[data]\nkind = \"fashion-mnist\"\n",
                                "old.toml", unknown);
    EXPECT_TRUE(unknown.empty());
    EXPECT_FALSE(s.model.kind.known());
    EXPECT_EQ(s.model.kind.name(), "mmdit");
    EXPECT_EQ(s.model.image_size, 28);
    const std::string written = toToml(s);
    EXPECT_NE(written.find("kind = \"mmdit\""), std::string::npos) << written;
    EXPECT_TRUE(parseSpec(written) == s);
}

struct BadText {
    const char* text;
    const char* message; // what the SpecError must contain
};

void PrintTo(const BadText& b, std::ostream* os) {
    std::string name = b.message;
    for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch)) && !std::strchr(" ._=:,*+-", ch)) ch = '_';
    *os << name;
}

class SpecTypeErrors : public ::testing::TestWithParam<BadText> {};

TEST_P(SpecTypeErrors, NameFieldAndLine) {
    try {
        parseSpec(GetParam().text, "quickstart.toml");
        FAIL() << "no error for: " << GetParam().text;
    } catch (const SpecError& e) {
        EXPECT_NE(std::string(e.what()).find(GetParam().message), std::string::npos)
            << "got: " << e.what() << "\nexpected: " << GetParam().message;
    }
}

INSTANTIATE_TEST_SUITE_P(
    SpecIO, SpecTypeErrors,
    ::testing::Values(
        BadText{"name = \"q\"\n[train]\nsteps = \"ten\"\n", "quickstart.toml:3: train.steps must be an integer, got string \"ten\""},
        BadText{"[train]\n\n\nsteps = 10.0\n", "quickstart.toml:4: train.steps must be an integer, got float 10.0"},
        BadText{"[train]\nlr = \"3e-4\"\n", "quickstart.toml:2: train.lr must be a number, got string \"3e-4\""},
        BadText{"[train]\nseed = -1\n", "quickstart.toml:2: train.seed must be a non-negative integer"},
        BadText{"[train]\nseed = \"12ab\"\n", "train.seed must be a non-negative integer, got string \"12ab\""},
        BadText{"[train]\nseed = \"99999999999999999999999\"\n", "train.seed must be a non-negative integer"},
        BadText{"[data]\nshuffle = 1\n", "quickstart.toml:2: data.shuffle must be a boolean (true or false), got integer 1"},
        BadText{"name = 5\n", "quickstart.toml:1: name must be a string, got integer 5"},
        BadText{"model = \"gpt\"\n", "quickstart.toml:1: model must be a table ([model]), got string \"gpt\""},
        BadText{"[model]\nlayers = [1]\n", "quickstart.toml:2: model.layers must be an integer, got array [1]"},
        BadText{"[parallel]\nstage_layers = 4\n", "parallel.stage_layers must be an array of integers, got integer 4"},
        BadText{"[parallel]\nstage_layers = [\n  1,\n  \"a\",\n]\n",
                "quickstart.toml:4: parallel.stage_layers[1] must be an integer, got string \"a\""},
        BadText{"[launch]\nhosts = \"node1:8\"\n", "launch.hosts must be an array of strings, got string \"node1:8\""},
        BadText{"[launch]\nhosts = [\"a:1\", 2]\n", "launch.hosts[1] must be a string, got integer 2"},
        BadText{"[launch]\nenv = \"X=1\"\n", "launch.env must be a table of strings ([launch.env])"},
        BadText{"[launch.env]\nOMP_NUM_THREADS = 4\n",
                "quickstart.toml:2: launch.env.OMP_NUM_THREADS must be a string, got integer 4; environment values are "
                "text, write it in quotes"},
        BadText{"[launch]\nprocesses = 2.5\n", "launch.processes must be an integer, got float 2.5"},
        // TOML syntax: line and column.
        BadText{"[train]\nsteps = \n", "quickstart.toml:2:9: TOML syntax error"},
        BadText{"[train]\nsteps = 1\n[train]\n", "quickstart.toml:3:1: TOML syntax error"},
        BadText{"name = \"unterminated\n", "quickstart.toml:1:"}));

TEST(SpecIO, UnknownKeysAreReportedWithLineAndSuggestion) {
    std::vector<SpecIssue> unknown;
    const RunSpec s = parseSpec("name = \"x\"\n[train]\nsteps = 5\nstpes = 10\n[paralel]\ndp = 2\n[train.extra]\na = 1\n",
                                "quickstart.toml", unknown);
    EXPECT_EQ(s.train.steps, 5);
    ASSERT_EQ(unknown.size(), 3u);
    EXPECT_EQ(unknown[0].field, "train.stpes");
    EXPECT_TRUE(unknown[0].warning);
    EXPECT_NE(unknown[0].message.find("quickstart.toml:4: train.stpes: unknown key; did you mean train.steps?"),
              std::string::npos)
        << unknown[0].message;
    EXPECT_EQ(unknown[1].field, "paralel");
    EXPECT_NE(unknown[1].message.find("quickstart.toml:5: [paralel]: unknown section; did you mean [parallel]?"),
              std::string::npos)
        << unknown[1].message;
    EXPECT_EQ(unknown[2].field, "train.extra");

    // A key in the wrong section points to the right one.
    const auto moved = unknownKeys("[train]\ndp = 2\n");
    ASSERT_EQ(moved.size(), 1u);
    EXPECT_NE(moved[0].message.find("did you mean parallel.dp?"), std::string::npos) << moved[0].message;

    // The same warnings from a spec's kept keys, without lines.
    const auto kept = unknownKeys(s);
    ASSERT_EQ(kept.size(), 3u);
    std::set<std::string> fields;
    for (const SpecIssue& i : kept) fields.insert(i.field);
    EXPECT_EQ(fields, (std::set<std::string>{"train.stpes", "paralel", "train.extra"}));

    EXPECT_TRUE(unknownKeys(std::string("[train]\nsteps = 1\n")).empty());
    EXPECT_THROW(unknownKeys(std::string("[train\n")), SpecError);
}

class TempDir {
public:
    TempDir() {
        path = fs::temp_directory_path() / ("parallax-spec-io-" + std::to_string(::getpid()));
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() { fs::remove_all(path); }
    fs::path path;
};

TEST(SpecIO, WriteSpecFileIsAtomicAndReadable) {
    TempDir dir;
    const std::string file = (dir.path / "run.toml").string();
    {
        std::ofstream old(file);
        old << "name = \"old\"\n";
    }
    const RunSpec full = fullSpec();
    writeSpecFile(full, file);
    EXPECT_TRUE(readSpecFile(file) == full);
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir.path)) names.push_back(entry.path().filename().string());
    EXPECT_EQ(names, std::vector<std::string>{"run.toml"}); // no temporary file left behind

    std::vector<SpecIssue> unknown;
    readSpecFile(file, unknown);
    EXPECT_EQ(unknown.size(), 10u);
}

TEST(SpecIO, FileErrorsNameThePath) {
    TempDir dir;
    const std::string missing = (dir.path / "missing.toml").string();
    try {
        readSpecFile(missing);
        FAIL();
    } catch (const SpecError& e) {
        EXPECT_NE(std::string(e.what()).find(missing + ": cannot read the spec file"), std::string::npos) << e.what();
    }
    const std::string nowhere = (dir.path / "no-such-dir" / "run.toml").string();
    try {
        writeSpecFile(RunSpec{}, nowhere);
        FAIL();
    } catch (const SpecError& e) {
        EXPECT_NE(std::string(e.what()).find(nowhere + ": cannot write the spec file"), std::string::npos) << e.what();
    }
    // Errors inside a file carry its path and line.
    const std::string bad = (dir.path / "bad.toml").string();
    {
        std::ofstream out(bad);
        out << "[train]\nsteps = \"ten\"\n";
    }
    try {
        readSpecFile(bad);
        FAIL();
    } catch (const SpecError& e) {
        EXPECT_NE(std::string(e.what()).find(bad + ":2: train.steps must be an integer"), std::string::npos) << e.what();
    }
}

// A folder, an empty file or one of comments only would otherwise read as a run of all defaults.
TEST(SpecIO, AFolderOrAFileThatSetsNothingIsNotASpec) {
    TempDir dir;
    auto messageOf = [](const std::string& path) -> std::string {
        try {
            readSpecFile(path);
        } catch (const SpecError& e) {
            return e.what();
        }
        return "read without an error";
    };
    const std::string folder = dir.path.string();
    EXPECT_NE(messageOf(folder).find(folder + ": is a directory, not a spec file"), std::string::npos)
        << messageOf(folder);
    for (const char* text : {"", "  \n\n", "# only a comment\n"}) {
        const std::string file = (dir.path / "blank.toml").string();
        {
            std::ofstream out(file);
            out << text;
        }
        EXPECT_NE(messageOf(file).find(file + ": the spec file sets nothing"), std::string::npos) << messageOf(file);
        std::vector<SpecIssue> unknown;
        EXPECT_THROW(readSpecFile(file, unknown), SpecError);
    }
    const std::string named = (dir.path / "named.toml").string();
    {
        std::ofstream out(named);
        out << "name = \"only-a-name\"\n";
    }
    EXPECT_EQ(readSpecFile(named).name, "only-a-name");
}

TEST(SpecIO, EmptyDocumentGivesDefaults) {
    EXPECT_TRUE(parseSpec("") == RunSpec{});
    EXPECT_TRUE(parseSpec(toToml(RunSpec{})) == RunSpec{});
}

} // namespace
} // namespace parallax
