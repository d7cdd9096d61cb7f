#include "core/spec/SpecFields.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecValidator.h"

#include "tests/core/spec/IssueText.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include <unistd.h>

namespace parallax {
namespace {

namespace fs = std::filesystem;

// One spec that must be reported: a small TOML text applied over the defaults, the field the
// issue names and a part of its message.
struct Case {
    const char* text;
    const char* field;
    const char* message;
    bool warning = false;
};

// The case's name in test listings (and ctest): its field and expected message, in characters
// that survive every test runner.
void PrintTo(const Case& c, std::ostream* os) {
    std::string name = std::string(c.field) + " " + c.message;
    for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch)) && !std::strchr(" ._=:,*+-", ch)) ch = '_';
    *os << name;
}

class InvalidSpec : public ::testing::TestWithParam<Case> {};

TEST_P(InvalidSpec, IsReportedOnItsFieldWithTheFix) {
    const Case& c = GetParam();
    const RunSpec spec = parseSpec(c.text, "case.toml");
    const std::vector<SpecIssue> issues = validateSpec(spec);
    bool found = false;
    for (const SpecIssue& i : issues)
        if (i.field == c.field && i.message.find(c.message) != std::string::npos && i.warning == c.warning) found = true;
    EXPECT_TRUE(found) << "expected " << (c.warning ? "warning" : "error") << " on " << c.field << " containing \""
                       << c.message << "\"; got:\n"
                       << describe(issues);
    if (!c.warning) {
        EXPECT_TRUE(hasErrors(issues));
    }
}

INSTANTIATE_TEST_SUITE_P(
    Errors, InvalidSpec,
    ::testing::Values(
        // name
        Case{"name = \"\"", "name", "name is empty"},
        Case{"name = \"my run/1\"", "name", "use \"my-run-1\""},
        Case{"name = \".hidden\"", "name", "may hold only letters, digits"},
        // model
        Case{"[model]\nkind = \"gtp\"", "model.kind", "is unknown; use one of gpt, qwen2_5_vl, qwen2, qwen_image, qwen_image_vae; did you mean \"gpt\"?"},
        // A retired kind (a spec of an old run) says what took its place.
        Case{"[model]\nkind = \"mmdit\"", "model.kind",
             "model.kind = \"mmdit\" is unknown; the look-alike MMDiT was retired: model.kind = \"qwen_image\" trains "
             "the published one"},
        Case{"[model]\npreset = \"tinyy\"", "model.preset", "did you mean \"tiny\"?"},
        Case{"[model]\ndim = 0", "model.dim", "model.dim = 0 must be at least 1"},
        Case{"[model]\nlayers = -2", "model.layers", "must be at least 1"},
        Case{"[model]\ndim = 100\nheads = 3", "model.heads", "model.dim = 100 is not divisible by model.heads = 3; use heads among 1, 2, 4, 5"},
        Case{"[model]\ndim = 60\nheads = 6\n[parallel]\ntp = 4", "model.heads",
             "model.heads = 6 is not divisible by parallel.tp = 4; choose parallel.tp among 1, 2"},
        Case{"[model]\nffn = 255\n[parallel]\ntp = 2", "model.ffn", "model.ffn = 255 is not divisible by parallel.tp = 2"},
        Case{"[model]\nvocab = 257\n[parallel]\ntp = 2", "model.vocab", "pad it: model.vocab = 258"},
        Case{"[model]\nkind = \"qwen2_5_vl\"\nvision_dim = 64\nvision_heads = 3", "model.vision_heads",
             "model.vision_dim = 64 is not divisible by model.vision_heads = 3"},
        Case{"[model]\nkind = \"qwen_image\"\nimage_size = 13", "model.patch",
             "model.image_size = 13 is not divisible by model.patch = 2; use patch among 1, 13"},
        // data
        Case{"[data]\nkind = \"fashion_mnist\"", "data.kind", "did you mean \"fashion-mnist\"?"},
        Case{"[data]\non_bad_sample = \"skipp\"", "data.on_bad_sample",
             "data.on_bad_sample = \"skipp\" is unknown; use one of fail, skip; did you mean \"skip\"?"},
        Case{"[model]\nkind = \"qwen_image_vae\"\n[data]\nkind = \"text\"\npath = \"/\"", "data.kind", "model.kind = \"gpt\""},
        Case{"[data]\nkind = \"fashion-mnist\"", "data.kind", "model.kind = \"gpt\" cannot read"},
        Case{"[model]\nvocab = 128\n[data]\nkind = \"text\"\npath = \"/\"", "model.vocab",
             "model.vocab = 128 is too small for data.kind = \"text\""},
        Case{"[data]\nkind = \"text\"", "data.path", "data.path is empty"},
        Case{"[data]\nkind = \"text\"\npath = \"/no/such/corpus.txt\"", "data.path", "does not exist"},
        Case{"[model]\nkind = \"qwen_image_vae\"\n[data]\nkind = \"image-folder\"\npath = \"/no/such/images\"", "data.path",
             "does not exist or is not a folder of class subfolders"},
        Case{"[model]\nkind = \"qwen_image_vae\"\n[data]\nkind = \"fashion-mnist\"\npath = \"/no/such/fmnist\"", "data.path",
             "has no Fashion-MNIST files"},
        Case{"[data]\nkind = \"text\"\npath = \"/\"", "data.path", "data.path = \"/\" does not exist or is not a text file"},
        // train
        Case{"[train]\nsteps = 0", "train.steps", "train.steps = 0 must be at least 1"},
        Case{"[train]\nmicro_batch = 0", "train.micro_batch", "must be at least 1"},
        Case{"[train]\nglobal_batch = 10\nmicro_batch = 2\n[parallel]\ndp = 2", "train.global_batch",
             "train.global_batch = 10 is not divisible by parallel.dp * train.micro_batch = 4; use 8 or 12"},
        Case{"[train]\nglobal_batch = 2\nmicro_batch = 4", "train.global_batch", "use 4"},
        Case{"[train]\nlr = 0", "train.lr", "train.lr = 0.0 must be a number greater than 0"},
        Case{"[train]\nlr = nan", "train.lr", "train.lr = nan must be a number greater than 0"},
        Case{"[train]\nlr = 1e-3\nmin_lr = 1e-2", "train.min_lr", "must be between 0 and train.lr"},
        Case{"[train]\nwarmup = -1", "train.warmup", "must be 0 or more"},
        Case{"[train]\nbeta2 = 1.0", "train.beta2", "must be in [0, 1)"},
        Case{"[train]\neps = 0", "train.eps", "greater than 0"},
        Case{"[train]\nweight_decay = -0.1", "train.weight_decay", "0 or more"},
        Case{"[train]\ngrad_clip = -1", "train.grad_clip", "train.grad_clip = -1.0 must be 0 (off) or more"},
        Case{"[train]\nprecision = \"bf16\"", "train.precision", "train.precision = bf16 needs launch.device = cuda"},
        Case{"[train]\nprecision = \"fp16\"", "train.precision", "is unknown; use one of fp32, bf16"},
        Case{"[train]\ncheckpoint_every = -5", "train.checkpoint_every", "must be 0 (only at stop and at the end) or more"},
        Case{"[train]\nactivation_checkpointing = true\nrecompute_blocks = -1", "train.recompute_blocks",
             "must be 0 (every block) or more"},
        Case{"[train]\nrecompute_blocks = 4", "train.recompute_blocks",
             "set train.activation_checkpointing = true, or train.recompute_blocks = 0"},
        // parallel
        Case{"[parallel]\ndp = 0", "parallel.dp", "parallel.dp = 0 must be at least 1"},
        Case{"[parallel]\ntp = -1", "parallel.tp", "must be at least 1"},
        Case{"[parallel]\npp = 0", "parallel.pp", "must be at least 1"},
        Case{"[parallel]\nzero = 4", "parallel.zero", "use 0 (off), 1 (optimizer states), 2 (+ gradients) or 3"},
        Case{"[parallel]\nschedule = \"1fb1\"", "parallel.schedule", "did you mean \"1f1b\"?"},
        Case{"[parallel]\nschedule = \"interleaved\"\nvirtual_stages = 2", "parallel.schedule",
             "\"interleaved\" needs parallel.pp of 2 or more"},
        Case{"[parallel]\nschedule = \"interleaved\"\npp = 2", "parallel.virtual_stages",
             "needs parallel.virtual_stages of 2 or more"},
        Case{"[parallel]\nschedule = \"interleaved\"\npp = 2\nvirtual_stages = 2", "parallel.virtual_stages",
             "model.layers = 2 blocks are not divisible by parallel.pp * parallel.virtual_stages = 4"},
        Case{"[model]\nlayers = 8\n[train]\nglobal_batch = 6\nmicro_batch = 2\n[parallel]\nschedule = \"interleaved\"\n"
             "pp = 2\nvirtual_stages = 2",
             "train.global_batch", "runs micro-batches in groups of parallel.pp = 2, but a step has 3"},
        Case{"[model]\nlayers = 8\n[parallel]\nschedule = \"interleaved\"\npp = 2\nvirtual_stages = 2\n"
             "stage_layers = [4, 4]",
             "parallel.stage_layers", "cannot be used with parallel.schedule = \"interleaved\""},
        Case{"[parallel]\nschedule = \"zb1\"\npp = 2\nvirtual_stages = 2", "parallel.virtual_stages",
             "parallel.virtual_stages = 2 cannot be used with parallel.schedule = \"zb1\", which runs one model chunk "
             "per stage; set parallel.virtual_stages = 1"},
        Case{"[train]\nglobal_batch = 16\n[parallel]\nschedule = \"zb1\"\npp = 2\ndp = 2\nzero = 3", "parallel.zero",
             "parallel.zero = 3 cannot be used with parallel.schedule = \"zb1\""},
        Case{"[model]\npreset = \"small\"\n[parallel]\npp = 4", "parallel.pp",
             "model.layers = 6 blocks are not divisible by parallel.pp = 4; use parallel.pp among 1, 2, 3, 6"},
        Case{"[parallel]\npp = 4", "parallel.pp", "parallel.pp = 4 is more than the 2 blocks"},
        Case{"[parallel]\npp = 2\nstage_layers = [1, 1, 1]", "parallel.stage_layers",
             "has 3 entries but parallel.pp = 2"},
        Case{"[parallel]\npp = 2\nstage_layers = [1, 2]", "parallel.stage_layers",
             "adds up to 3 blocks but the model has 2"},
        Case{"[parallel]\npp = 2\nstage_layers = [0, 2]", "parallel.stage_layers", "parallel.stage_layers[0] = 0 must be at least 1"},
        Case{"[model]\nkind = \"qwen2_5_vl\"\n[parallel]\npp = 2\nstage_layers = [1, 1]", "parallel.stage_layers",
             "model.vision_layers + model.layers = 4 + 2 = 6"},
        Case{"[parallel]\nbucket_mb = 0", "parallel.bucket_mb", "must be greater than 0"},
        Case{"[parallel]\nreduce_dtype = \"fp8\"", "parallel.reduce_dtype", "use one of fp32, bf16"},
        Case{"[parallel]\nreduce_dtype = \"bf16\"", "parallel.reduce_dtype", "needs launch.device = cuda"},
        // launch
        Case{"[launch]\ntarget = \"cluster\"", "launch.target", "use one of local, hosts, slurm"},
        Case{"[launch]\ntarget = \"slrum\"", "launch.target", "did you mean \"slurm\"?"},
        Case{"[launch]\ndevice = \"gpu\"", "launch.device", "use one of cpu, cuda"},
        Case{"[train]\nglobal_batch = 24\n[parallel]\ndp = 6\n[launch]\nprocesses = 4", "launch.processes",
             "parallel: dp*tp*pp = 6 but launch asks for 4 processes; set launch.processes = 6 or leave it out"},
        Case{"[launch]\nprocesses = 0", "launch.processes", "must be at least 1"},
        Case{"[launch]\ntarget = \"hosts\"", "launch.hosts", "launch.hosts is empty"},
        Case{"[launch]\ntarget = \"hosts\"\nhosts = [\"node1\"]", "launch.hosts",
             "launch.hosts[0] = \"node1\" must be \"name:slots\" with slots of 1 or more, e.g. \"node1:8\""},
        Case{"[launch]\ntarget = \"hosts\"\nhosts = [\"node1:0\"]", "launch.hosts", "must be \"name:slots\""},
        Case{"[parallel]\ndp = 2\n[launch]\ntarget = \"hosts\"\nhosts = [\"a:1\"]", "launch.hosts",
             "launch.hosts offer 1 slots but the run needs 2 processes"},
        Case{"[parallel]\ndp = 2\n[launch]\ntarget = \"hosts\"\nhosts = [\"a:1\", \"b:1\"]\nexclude_hosts = [\"b\"]",
             "launch.hosts", "launch.hosts offer 1 slots besides launch.exclude_hosts but the run needs 2 processes"},
        Case{"[launch]\ntarget = \"hosts\"\nhosts = [\"a:1\"]\nexclude_hosts = [\"c\"]", "launch.exclude_hosts",
             "launch.exclude_hosts names \"c\", which is not in launch.hosts"},
        Case{"[launch]\non_host_failure = \"retry\"", "launch.on_host_failure", "\"retry\""},
        Case{"[launch]\nmin_hosts = 0", "launch.min_hosts", "launch.min_hosts = 0 must be at least 1"},
        Case{"[launch]\nmax_restarts = -1", "launch.max_restarts", "launch.max_restarts = -1 must be at least 0"},
        Case{"[launch]\ntarget = \"hosts\"\nhosts = [\"a:1\"]\non_host_failure = \"resume\"\nmin_hosts = 2\n"
             "[train]\ncheckpoint_every = 10",
             "launch.min_hosts", "launch.min_hosts = 2 but launch.hosts names 1 host(s)"},
        Case{"[launch]\ntarget = \"hosts\"\nhosts = [\"a:1\"]\non_host_failure = \"resume\"\n[train]\ncheckpoint_every = 0",
             "launch.on_host_failure", "train.checkpoint_every = 0 writes none until the run ends", true},
        Case{"[launch]\non_host_failure = \"resume\"", "launch.on_host_failure",
             "used only with launch.target = \"hosts\"; here a lost host or rank fails the run", true},
        Case{"[launch]\ntarget = \"slurm\"\ntime_limit = \"2h\"", "launch.time_limit", "\"2h\" is not a Slurm time"},
        Case{"[launch]\ntarget = \"slurm\"\ntime_limit = \"01:75:00\"", "launch.time_limit", "\"01:75:00\" is not a Slurm time"},
        Case{"[launch]\nbind = \"cores\"", "launch.bind", "did you mean \"core\"?"},
        Case{"[launch.env]\n\"MY VAR\" = \"1\"", "launch.env", "launch.env.\"MY VAR\" is not a valid environment variable name"},
        Case{"[launch]\nmpirun_args = [\"\"]", "launch.mpirun_args", "is empty"},
        Case{"[launch]\nforward_env = [\"HF TOKEN\"]", "launch.forward_env",
             "launch.forward_env[0] = \"HF TOKEN\" is not a valid environment variable name"},
        Case{"[launch]\nforward_env = [\"HF_TOKEN\"]\n[launch.env]\nHF_TOKEN = \"x\"", "launch.forward_env",
             "which launch.env sets too"},
        Case{"[launch]\ngpus_per_node = -1", "launch.gpus_per_node", "must be 0 or more"},
        // telemetry
        Case{"[telemetry]\ndevice_sample_ms = 10", "telemetry.device_sample_ms", "is below 50"},
        Case{"[telemetry]\nspan_every = -1", "telemetry.span_every", "must be 0 (never record spans) or more"},
        Case{"[telemetry]\nstep_every = 0", "telemetry.step_every", "must be at least 1"}));

INSTANTIATE_TEST_SUITE_P(
    Warnings, InvalidSpec,
    ::testing::Values(
        Case{"[train]\nsteps = 10\nwarmup = 10", "train.warmup", "never reaches train.lr", true},
        Case{"[train]\nsteps = 10\ncheckpoint_every = 20", "train.checkpoint_every", "only the final checkpoint", true},
        Case{"[parallel]\nzero = 2", "parallel.zero", "has no effect with parallel.dp = 1", true},
        Case{"[model]\nlayers = 4\n[parallel]\npp = 4", "train.global_batch",
             "the pipeline idles 60% of the time; use at least 4, e.g. train.global_batch = 16", true},
        Case{"[parallel]\nvirtual_stages = 2", "parallel.virtual_stages", "used only by parallel.schedule", true},
        Case{"[parallel]\nschedule = \"zb1\"", "parallel.schedule",
             "parallel.pp = 1 has none: it runs as \"1f1b\"", true},
        Case{"[data]\npath = \"/data\"", "data.path", "ignored for data.kind = \"synthetic\"", true},
        Case{"[launch]\nhosts = [\"a:2\"]", "launch.hosts", "used only with launch.target = \"hosts\"", true},
        Case{"[launch]\npartition = \"gpu\"", "launch.partition", "used only with launch.target = \"slurm\"", true},
        Case{"[launch.env]\nWANDB_API_KEY = \"abc\"", "launch.env",
             "launch.env.WANDB_API_KEY looks like a secret, and its value is kept with the run's spec", true},
        Case{"[launch]\ntarget = \"slurm\"\ndevice = \"cuda\"", "launch.gpus_per_node", "asks Slurm for no GPUs", true},
        Case{"[model]\nimage_size = 32", "model.image_size", "ignored for model.kind = \"gpt\"", true},
        Case{"[model]\nkind = \"qwen_image_vae\"\nvision_dim = 32", "model.vision_dim", "used only by model.kind = \"qwen2_5_vl\"", true},
        Case{"[model]\nkind = \"qwen_image_vae\"\n[data]\nkind = \"fashion-mnist\"\npath = \"/no/such/fmnist\"\n[launch]\n"
             "target = \"slurm\"",
             "data.path", "checked on this machine", true},
        // Issue 19: a learning rate of 1e30 passed without a word.
        Case{"[train]\nlr = 1e30", "train.lr",
             "train.lr = 1e+30 is far above any usable rate (typical 1e-4 to 1e-2); the loss will diverge", true},
        Case{"[train]\nlr = 3e4", "train.lr", "is far above any usable rate", true}));

// A usable learning rate draws no warning; the largest one still accepted is 1.
TEST(SpecValidator, LearningRatesUpToOneAreQuiet) {
    for (const double lr : {1e-5, 3e-4, 1e-2, 0.5, 1.0}) {
        RunSpec s;
        s.train.lr = lr;
        EXPECT_TRUE(validateSpec(s).empty()) << lr << "\n" << describe(validateSpec(s));
    }
    RunSpec negative;
    negative.train.lr = -1e-3;
    EXPECT_TRUE(hasIssue(validateSpec(negative), "train.lr", "must be a number greater than 0", false));
}

// Issue 19: a change to parallel.tp reported an error on model.heads only, so the form marked a
// field the person had not touched. An issue lists the fields it depends on.
TEST(SpecValidator, IssuesNameTheFieldsTheyDependOn) {
    const auto relatedOf = [](const std::vector<SpecIssue>& issues, const std::string& field) {
        for (const SpecIssue& i : issues)
            if (i.field == field) return i.related;
        ADD_FAILURE() << "no issue on " << field << "\n" << describe(issues);
        return std::vector<std::string>{};
    };
    const auto has = [](const std::vector<std::string>& list, const std::string& field) {
        return std::find(list.begin(), list.end(), field) != list.end();
    };
    const auto tp3 = validateSpec(parseSpec("[model]\nheads = 4\n[parallel]\ntp = 3\n"));
    EXPECT_TRUE(has(relatedOf(tp3, "model.heads"), "parallel.tp"));
    EXPECT_TRUE(has(relatedOf(tp3, "model.heads"), "model.preset")); // a preset sets heads too
    const auto processes = validateSpec(parseSpec("[parallel]\ndp = 2\n[launch]\nprocesses = 3\n"));
    for (const char* f : {"parallel.dp", "parallel.tp", "parallel.pp"})
        EXPECT_TRUE(has(relatedOf(processes, "launch.processes"), f)) << f;
    const auto batch = validateSpec(parseSpec("[parallel]\ndp = 3\n[train]\nglobal_batch = 8\nmicro_batch = 2\n"));
    EXPECT_TRUE(has(relatedOf(batch, "train.global_batch"), "parallel.dp"));
    EXPECT_TRUE(has(relatedOf(batch, "train.global_batch"), "train.micro_batch"));
    const auto pp = validateSpec(parseSpec("[model]\nlayers = 4\n[parallel]\npp = 3\n"));
    EXPECT_TRUE(has(relatedOf(pp, "parallel.pp"), "model.layers"));
    // Issues of one field alone have none.
    EXPECT_TRUE(relatedOf(validateSpec(parseSpec("[train]\nsteps = 0\n")), "train.steps").empty());
}

// Every other field an issue's message names is among its related fields, so that the form can
// mark whichever of them a person changed.
TEST_P(InvalidSpec, RelatesTheOtherFieldsItsMessageNames) {
    const Case& c = GetParam();
    const std::vector<SpecIssue> issues = validateSpec(parseSpec(c.text, "case.toml"));
    for (const SpecIssue& i : issues) {
        if (i.field != c.field || i.message.find(c.message) == std::string::npos) continue;
        for (const std::string& path : specFieldPaths()) {
            if (path == i.field || path.find('.') == std::string::npos) continue;
            size_t at = i.message.find(path);
            bool named = false;
            for (; at != std::string::npos && !named; at = i.message.find(path, at + 1)) {
                const size_t end = at + path.size();
                named = end == i.message.size() || !(std::isalnum(static_cast<unsigned char>(i.message[end])) ||
                                                     i.message[end] == '_');
            }
            // A fix that only suggests setting another field ("or use launch.target = ...") names it too,
            // and relating it costs nothing; a field named only as the example of a whole section does not.
            if (!named) continue;
            EXPECT_NE(std::find(i.related.begin(), i.related.end(), path), i.related.end())
                << i.field << " | " << i.message << "\nnames " << path << " but does not relate it";
        }
    }
}

// The pipeline micro-batch warning fires only when there are fewer micro-batches than stages.
TEST(SpecValidator, EnoughMicroBatchesNeedNoWarning) {
    RunSpec s = parseSpec("[parallel]\npp = 2\n[train]\nglobal_batch = 8\nmicro_batch = 4\n");
    ASSERT_EQ(s.accumulation(), 2);
    EXPECT_TRUE(validateSpec(s).empty()) << describe(validateSpec(s));
    s.train.micro_batch = 8; // one micro-batch for two stages
    const auto issues = validateSpec(s);
    ASSERT_EQ(issues.size(), 1u) << describe(issues);
    EXPECT_TRUE(issues[0].warning);
    EXPECT_EQ(issues[0].field, "train.global_batch");
}

class TempData {
public:
    TempData() {
        root = fs::temp_directory_path() / ("parallax-spec-validator-" + std::to_string(::getpid()));
        fs::remove_all(root);
        fs::create_directories(root / "fmnist");
        fs::create_directories(root / "images");
        for (const char* name : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"})
            std::ofstream(root / "fmnist" / name) << "x";
        std::ofstream(root / "corpus.txt") << std::string(1000, 'a');
        std::ofstream(root / "short.txt") << "hello";
    }
    ~TempData() { fs::remove_all(root); }
    fs::path root;
};

TEST(SpecValidator, ValidSpecsOfEveryKindHaveNoErrors) {
    TempData data;
    const std::string fmnist = (data.root / "fmnist").string();
    const std::string images = (data.root / "images").string();
    const std::string corpus = (data.root / "corpus.txt").string();

    std::vector<RunSpec> specs;
    const std::pair<const char*, std::vector<const char*>> kindPresets[] = {
        {"gpt", {"tiny", "small", "base", "1b", "custom"}},
        {"qwen_image", {"tiny", "20b-512px", "20b"}},
        {"qwen_image_vae", {"tiny", "published"}}};
    for (const auto& [kind, presets] : kindPresets) {
        for (const char* preset : presets) {
            RunSpec s;
            s.model.kind = Choice<ModelKind>::named(kind);
            s.model.preset = preset;
            specs.push_back(s);
        }
    }
    RunSpec text;
    text.data.kind = DataKind::Text;
    text.data.path = corpus;
    specs.push_back(text);
    for (const char* kind : {"qwen_image_vae"}) {
        RunSpec fashion;
        fashion.model.kind = Choice<ModelKind>::named(kind);
        fashion.data.kind = DataKind::FashionMnist;
        fashion.data.path = fmnist;
        specs.push_back(fashion);
        RunSpec folder;
        folder.model.kind = Choice<ModelKind>::named(kind);
        folder.data.kind = DataKind::ImageFolder;
        folder.data.path = images;
        specs.push_back(folder);
    }
    // Layouts.
    specs.push_back(parseSpec("[model]\npreset = \"small\"\n[train]\nglobal_batch = 16\n[parallel]\ntp = 2\npp = 2\n"));
    specs.push_back(parseSpec("[model]\npreset = \"small\"\nlayers = 8\n[train]\nglobal_batch = 16\nmicro_batch = 2\n"
                              "[parallel]\npp = 4\nschedule = \"interleaved\"\nvirtual_stages = 2\n"));
    specs.push_back(parseSpec("[model]\npreset = \"small\"\n[train]\nglobal_batch = 32\nmicro_batch = 2\n[parallel]\n"
                              "pp = 4\nschedule = \"gpipe\"\nstage_layers = [1, 2, 2, 1]\n"));
    specs.push_back(parseSpec("[model]\npreset = \"small\"\n[train]\nglobal_batch = 16\nmicro_batch = 2\n"
                              "activation_checkpointing = true\n[parallel]\ndp = 2\npp = 2\nzero = 2\nschedule = \"zb1\"\n"));
    specs.push_back(parseSpec("[model]\npreset = \"small\"\n[train]\nglobal_batch = 16\nmicro_batch = 2\n"
                              "activation_checkpointing = true\nrecompute_blocks = 2\n[parallel]\npp = 2\n"));
    specs.push_back(parseSpec("[model]\nkind = \"qwen_image_vae\"\n[train]\nglobal_batch = 16\n[parallel]\ndp = 4\nzero = 3\n"));
    specs.push_back(parseSpec("[model]\nkind = \"qwen_image\"\n[train]\nglobal_batch = 16\n[parallel]\ndp = 4\nzero = 3\n"));
    specs.push_back(parseSpec("[model]\npreset = \"1b\"\n[train]\nprecision = \"bf16\"\nglobal_batch = 64\n"
                              "activation_checkpointing = true\n[parallel]\ndp = 4\ntp = 4\nzero = 1\nreduce_dtype = \"bf16\"\n"
                              "[launch]\ndevice = \"cuda\"\ntarget = \"hosts\"\nhosts = [\"node1:8\", \"node2:8\"]\n"
                              "processes = 16\nbind = \"socket\"\n[launch.env]\nNCCL_DEBUG = \"WARN\"\n"));
    specs.push_back(parseSpec("[train]\nglobal_batch = 16\n[parallel]\ndp = 4\n[launch]\ntarget = \"slurm\"\n"
                              "device = \"cuda\"\ngpus_per_node = 4\ntime_limit = \"1-02:30:00\"\naccount = \"a\"\n"));
    specs.push_back(parseSpec("[launch]\ntarget = \"slurm\"\ntime_limit = \"90\"\n"));
    specs.push_back(parseSpec("[launch]\ntarget = \"slurm\"\ntime_limit = \"30:00\"\n"));

    for (const RunSpec& s : specs) {
        const auto issues = validateSpec(s);
        EXPECT_FALSE(hasErrors(issues)) << toToml(s) << describe(issues);
    }
}

TEST(SpecValidator, TextMustHoldOneSample) {
    TempData data;
    RunSpec s;
    s.data.kind = DataKind::Text;
    s.data.path = (data.root / "short.txt").string();
    const auto issues = validateSpec(s);
    ASSERT_EQ(issues.size(), 1u) << describe(issues);
    EXPECT_EQ(issues[0].field, "data.path");
    EXPECT_NE(issues[0].message.find("has 5 bytes, but one sample needs model.seq_len + 1 = 65"), std::string::npos)
        << issues[0].message;
    s.model.seq_len = 4;
    EXPECT_TRUE(validateSpec(s).empty()) << describe(validateSpec(s));
}

TEST(SpecValidator, ManyProblemsAreAllReportedInFieldOrder) {
    const RunSpec s = parseSpec("name = \"\"\n[train]\nsteps = 0\n[parallel]\ndp = 0\n[telemetry]\nstep_every = 0\n");
    const auto issues = validateSpec(s);
    std::vector<std::string> fields;
    for (const SpecIssue& i : issues) fields.push_back(i.field);
    EXPECT_EQ(fields, (std::vector<std::string>{"name", "train.steps", "parallel.dp", "telemetry.step_every"}))
        << describe(issues);
}

TEST(SpecValidator, FormatIssuesPutsErrorsFirst) {
    const std::vector<SpecIssue> issues = {
        {"parallel.zero", "parallel.zero = 1 has no effect", true},
        {"train.steps", "train.steps = 0 must be at least 1", false},
        {"launch.env", "bad name", false},
    };
    EXPECT_EQ(formatIssues(issues), "train.steps = 0 must be at least 1\n"
                                    "launch.env: bad name\n"
                                    "warning: parallel.zero = 1 has no effect\n");
    EXPECT_TRUE(hasErrors(issues));
    EXPECT_FALSE(hasErrors({issues[0]}));
    EXPECT_EQ(formatIssues({}), "");
}

TEST(SpecValidator, DefaultSpecIsClean) {
    EXPECT_TRUE(validateSpec(RunSpec{}).empty()) << describe(validateSpec(RunSpec{}));
}

TEST(SpecValidator, DefaultDataPaths) {
    EXPECT_EQ(defaultDataPath(DataKind::FashionMnist), "/usr/share/datasets/fashion-mnist");
    EXPECT_EQ(defaultDataPath(DataKind::Text), "");
    EXPECT_EQ(defaultDataPath(DataKind::Synthetic), "");
}

} // namespace
} // namespace parallax
