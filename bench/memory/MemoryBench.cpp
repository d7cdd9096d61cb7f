// The memory estimate of the New run form against the peak resident memory a run measures, for a
// qwen_image transformer near 0.5B parameters (14 blocks of 8 heads of 128, prompt states of 3584)
// on synthetic latents of 32 x 32 (256 image tokens) with 64 prompt states: a LoRA run (DiffSynth's
// targets, r 16) and a full fine-tune (AdamW), one process, fp32 on CPU. Each mode runs a few
// steps through `parallax-cli run`; the measured figure is the largest step's peak resident
// memory (StepEvent.peak_mem) from the second step on (the first's, printed beside, also holds the
// run's start), the estimate is estimate(spec).memory, whose `runtime` part on a CPU is the
// libraries' resident size and the heap's slack: the row prints both and their ratio, and a run of
// the tiny preset shows the runtime nearly alone.
//
// --kind qwen2_5_vl measures a Qwen2.5-VL near 0.5B parameters instead (VlBenchFolder.h: a folder of
// random weights and two conversations with a 448 x 448 image each, model.seq_len 512) trained
// three ways: `full` (every part), `frozen-vision` (the tower and merger frozen, [finetune]'s
// defaults) and `lora` (r 16 on the language model's Linears).
//
//   bench_memory [--kind qwen_image|qwen2_5_vl] [--layers N] [--heads N] [--latent N] [--prompt N]
//                [--steps N] [--modes lora,full] [--tokenizer JSON]
//   (from the build folder, as `make bench` runs it)

#include "bench/memory/VlBenchFolder.h"
#include "core/spec/Estimates.h"
#include "core/spec/SpecIO.h"
#include "core/store/RunStore.h"
#include "tests/support/Process.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace parallax;
namespace fs = std::filesystem;

struct Options {
    std::string kind = "qwen_image";
    int64_t layers = 14, heads = 8, latent = 32, prompt = 64, steps = 3;
    std::vector<std::string> modes;
    std::string tokenizer = "npm-oracle/qwen/tokenizer.json";
    VlBenchFolder vl; // --kind qwen2_5_vl
};

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string key = argv[i];
        const char* value = argv[i + 1];
        if (key == "--kind") o.kind = value;
        else if (key == "--tokenizer") o.tokenizer = value;
        else if (key == "--layers") o.layers = std::atoll(value);
        else if (key == "--heads") o.heads = std::atoll(value);
        else if (key == "--latent") o.latent = std::atoll(value);
        else if (key == "--prompt") o.prompt = std::atoll(value);
        else if (key == "--steps") o.steps = std::atoll(value);
        else if (key == "--modes") {
            o.modes.clear();
            std::stringstream list(value);
            for (std::string m; std::getline(list, m, ',');) o.modes.push_back(m);
        } else {
            std::fprintf(stderr, "unknown option %s\n", key.c_str());
            std::exit(2);
        }
    }
    if (o.kind != "qwen_image" && o.kind != "qwen2_5_vl") {
        std::fprintf(stderr, "--kind %s: use qwen_image or qwen2_5_vl\n", o.kind.c_str());
        std::exit(2);
    }
    if (o.modes.empty())
        o.modes = o.kind == "qwen2_5_vl" ? std::vector<std::string>{"lora", "frozen-vision", "full"}
                                         : std::vector<std::string>{"lora", "full"};
    return o;
}

// A qwen2_5_vl mode on the benchmark's folder and conversations.
std::string vlSpecText(const Options& o, const std::string& mode) {
    std::ostringstream s;
    s << "name = \"memory-vl-" << mode << "\"\n[model]\nkind = \"qwen2_5_vl\"\nfrom = \"" << o.vl.folder
      << "\"\nseq_len = 512\n[data]\nkind = \"conversations\"\npath = \"" << o.vl.jsonl
      << "\"\nmax_pixels = 200704\nshuffle = false\n[train]\nsteps = " << o.steps
      << "\nglobal_batch = 1\nmicro_batch = 1\nwarmup = 1\ncheckpoint_every = 0\n[finetune]\n";
    if (mode == "lora") s << "mode = \"lora\"\nlora_r = 16\nlora_alpha = 16\n";
    else if (mode == "full") s << "mode = \"full\"\nfreeze_vision = false\nfreeze_merger = false\n";
    else s << "mode = \"full\"\n";
    s << "[telemetry]\ndevice_sample_ms = 1000\n";
    return s.str();
}

// The spec of one mode ("lora", "full", or "tiny": the runtime's own footprint).
std::string specText(const Options& o, const std::string& mode) {
    if (o.kind == "qwen2_5_vl" && mode != "tiny") return vlSpecText(o, mode);
    std::ostringstream s;
    s << "name = \"memory-" << mode << "\"\n[model]\nkind = \"qwen_image\"\n";
    if (mode != "tiny")
        // The published preset's head width (128) and rotary axes, narrowed and shortened.
        s << "preset = \"20b-512px\"\nlayers = " << o.layers << "\nheads = " << o.heads << "\ndim = " << o.heads * 128
          << "\nffn = " << 4 * o.heads * 128 << "\nseq_len = " << o.prompt
          << "\nimage_size = " << o.latent << "\n";
    s << "[data]\nkind = \"synthetic\"\n[train]\nsteps = " << o.steps
      << "\nglobal_batch = 1\nmicro_batch = 1\nwarmup = 1\ncheckpoint_every = 0\n";
    if (mode == "lora") s << "[finetune]\nmode = \"lora\"\nlora_r = 16\nlora_alpha = 16\n";
    s << "[telemetry]\ndevice_sample_ms = 1000\n";
    return s.str();
}

double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

// The largest step peak of the newest run in `store`, from its second step on: the first step's
// peak also holds the run's start (a model folder read and converted), which the estimate of a
// step's training state leaves out. `first` receives that first step's.
double measuredPeak(const std::string& store, double* first) {
    RunStore runs(store);
    int64_t newest = 0;
    for (const RunRecord& r : runs.listRuns()) newest = std::max(newest, r.id);
    const std::vector<StepEvent> steps = runs.metrics(newest);
    double peak = 0;
    for (size_t i = steps.size() > 1 ? 1 : 0; i < steps.size(); ++i) peak = std::max(peak, steps[i].peak_mem);
    *first = steps.empty() ? 0 : steps.front().peak_mem;
    return peak;
}

} // namespace

int main(int argc, char** argv) {
    Options o = parse(argc, argv);
    const fs::path root = fs::temp_directory_path() / ("parallax-memory-bench-" + std::to_string(::getpid()));
    fs::create_directories(root);
    if (o.kind == "qwen2_5_vl") {
        o.vl = makeVlBenchFolder(root.string(), o.tokenizer);
        if (!o.vl.problem.empty()) {
            std::fprintf(stderr, "bench_memory: %s\n", o.vl.problem.c_str());
            fs::remove_all(root);
            return 2;
        }
    }
    const std::string cli = (fs::current_path() / "app" / "parallax-cli").string();
    int status = 0;
    std::printf("| run | parameters | estimate MiB (weights / grads / optimizer / activations / buffers / runtime) | measured peak MiB "
                "(steps 2 on) | measured / estimate | first step's peak MiB (with the start) |\n");
    std::printf("|---|---:|---|---:|---:|---:|\n");
    std::vector<std::string> modes = o.modes;
    modes.insert(modes.begin(), "tiny");
    for (const std::string& mode : modes) {
        const std::string text = specText(o, mode);
        const fs::path spec = root / (mode + ".toml");
        std::ofstream(spec) << text;
        const Estimates e = estimate(parseSpec(text, spec.string()));
        const MemoryEstimate& m = e.memory;
        const double total = m.total();
        const std::string store = (root / (mode + ".db")).string();
        const testing::ProcessResult run = testing::runProcess({cli, "--store", store, "run", spec.string()});
        if (run.exitCode != 0) {
            std::printf("| %s | failed (exit %d) | | | | |\n%s\n", mode.c_str(), run.exitCode, run.output.c_str());
            status = 1;
            continue;
        }
        double first = 0;
        const double peak = measuredPeak(store, &first);
        std::printf("| %s | %s | %.0f (%.0f / %.0f / %.0f / %.0f / %.0f / %.0f) | %.0f | %.2f | %.0f |\n",
                    mode.c_str(), formatCount(double(e.params)).c_str(), mib(total), mib(m.weights), mib(m.gradients),
                    mib(m.optimizer), mib(m.activations), mib(m.buffers), mib(m.runtime), mib(peak),
                    total > 0 ? peak / total : 0.0, mib(first));
        std::fflush(stdout);
    }
    fs::remove_all(root);
    return status;
}
