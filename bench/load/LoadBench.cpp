// Peak resident memory of each rank while it loads a model folder (model.from): every rank reads
// only the part it holds (its tensor-parallel slab, its pipeline stage, its ZeRO-3 range) from the
// mapped safetensors files. Writes a Qwen2-layout checkpoint of random bf16 weights, then for each
// layout runs one LoRA step through `parallax-cli run` and prints, per rank, the seconds the load
// took and the process's peak resident memory after it (the worker's "read this rank's part" line),
// against the model's size in fp32.
//
//   bench_load [--dir FOLDER] [--layers N] [--hidden N] [--ffn N] [--heads N] [--vocab N]
//              [--layouts one,tp2,pp2,tp2pp2] [--keep]
//
// The default is about 1.36B parameters (24 layers of 2048, SwiGLU 5632, vocabulary 32000, untied):
// 2.7 GB of bf16 on disk, 5.4 GB as fp32. FOLDER (default $TMPDIR or /tmp) needs that much free
// space. LoRA keeps the base weights frozen, so a rank holds its share of them and no gradient or
// optimizer state of theirs: what it holds after loading is its share of the model.

#include "core/formats/SafetensorsWriter.h"
#include "core/spec/ModelDims.h"
#include "core/spec/QwenModels.h"
#include "core/store/RunStore.h"
#include "tests/support/Process.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace parallax;
namespace fs = std::filesystem;

struct Options {
    std::string dir;
    int64_t layers = 24, hidden = 2048, ffn = 5632, heads = 16, vocab = 32000;
    std::vector<std::string> layouts = {"one", "pp2", "tp2", "tp2pp2"};
    bool keep = false;
};

struct Layout {
    const char* name;
    int tp, pp;
};
constexpr Layout kLayouts[] = {{"one", 1, 1}, {"pp2", 1, 2}, {"tp2", 2, 1}, {"tp2pp2", 2, 2}};

std::vector<std::string> split(const std::string& text) {
    std::vector<std::string> parts;
    std::stringstream in(text);
    for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
    return parts;
}

Options parse(int argc, char** argv) {
    Options o;
    const char* tmp = std::getenv("TMPDIR");
    o.dir = tmp && *tmp ? tmp : "/tmp";
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "bench_load: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--dir") o.dir = next();
        else if (a == "--layers") o.layers = std::stoll(next());
        else if (a == "--hidden") o.hidden = std::stoll(next());
        else if (a == "--ffn") o.ffn = std::stoll(next());
        else if (a == "--heads") o.heads = std::stoll(next());
        else if (a == "--vocab") o.vocab = std::stoll(next());
        else if (a == "--layouts") o.layouts = split(next());
        else if (a == "--keep") o.keep = true;
        else {
            std::fprintf(stderr, "bench_load: unknown argument %s\n", a.c_str());
            std::exit(2);
        }
    }
    return o;
}

void writeText(const fs::path& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path.string());
}

// config.json and model.safetensors of a Qwen2 language model: every tensor of the kind's list
// (ModelTensors), filled from one buffer of random bf16 values of about 0.02.
ModelDims writeCheckpoint(const Options& o, const fs::path& folder) {
    fs::create_directories(folder);
    std::ostringstream config;
    config << "{\"architectures\": [\"Qwen2ForCausalLM\"], \"model_type\": \"qwen2\", \"torch_dtype\": \"bfloat16\", "
           << "\"hidden_size\": " << o.hidden << ", \"intermediate_size\": " << o.ffn
           << ", \"num_hidden_layers\": " << o.layers << ", \"num_attention_heads\": " << o.heads
           << ", \"num_key_value_heads\": " << o.heads << ", \"vocab_size\": " << o.vocab
           << ", \"rms_norm_eps\": 1e-06, \"rope_theta\": 1000000.0, \"max_position_embeddings\": 4096, "
           << "\"tie_word_embeddings\": false, \"bos_token_id\": 1, \"eos_token_id\": 2}";
    writeText(folder / "config.json", config.str());
    ModelSpec spec;
    spec.kind = ModelKind::Qwen2;
    spec.from = folder.string();
    const ModelDims dims = resolveModel(spec);
    const std::vector<ModelTensor> tensors = qwen2Tensors(dims);
    int64_t largest = 0;
    for (const ModelTensor& t : tensors) largest = std::max(largest, t.elements());
    std::vector<uint16_t> values(static_cast<size_t>(largest));
    std::mt19937 random(7);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    for (uint16_t& v : values) {
        const float f = normal(random);
        uint32_t bits;
        std::memcpy(&bits, &f, sizeof bits);
        v = static_cast<uint16_t>(bits >> 16);
    }
    std::vector<TensorData> data;
    for (const ModelTensor& t : tensors) data.push_back({t.name, Dtype::BF16, t.shape, values.data()});
    writeSafetensors((folder / "model.safetensors").string(), data);
    return dims;
}

std::string specText(const Layout& l, const std::string& folder) {
    std::ostringstream s;
    s << "name = \"load-" << l.name << "\"\n"
      << "[model]\nkind = \"qwen2\"\nfrom = \"" << folder << "\"\nseq_len = 32\n"
      << "[data]\nkind = \"synthetic\"\n"
      << "[train]\nsteps = 1\nglobal_batch = 2\nmicro_batch = 1\n"
      << "[finetune]\nmode = \"lora\"\nlora_targets = [\"q_proj\", \"v_proj\"]\n"
      << "[parallel]\ntp = " << l.tp << "\npp = " << l.pp << "\n";
    return s.str();
}

// "read this rank's part of model.from = ... in 3.2 s; peak resident memory so far 1234.5 MiB"
struct RankLoad {
    int rank = 0;
    double seconds = 0, peakMiB = 0;
};

std::vector<RankLoad> loads(const std::string& store) {
    RunStore runs(store);
    std::vector<RankLoad> out;
    const std::vector<RunRecord> all = runs.listRuns();
    if (all.empty()) return out;
    int64_t newest = 0;
    for (const RunRecord& r : all) newest = std::max(newest, r.id);
    LogQuery q;
    q.match = "\"read this rank's part\"";
    for (const LogRow& row : runs.logs(newest, q)) {
        RankLoad l;
        l.rank = row.rank;
        const size_t in = row.message.rfind(" in "), peak = row.message.rfind("so far ");
        if (in == std::string::npos || peak == std::string::npos) continue;
        l.seconds = std::atof(row.message.c_str() + in + 4);
        l.peakMiB = std::atof(row.message.c_str() + peak + 7);
        out.push_back(l);
    }
    std::sort(out.begin(), out.end(), [](const RankLoad& a, const RankLoad& b) { return a.rank < b.rank; });
    return out;
}

} // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    const fs::path root = fs::path(o.dir) / ("parallax-load-bench-" + std::to_string(::getpid()));
    const fs::path folder = root / "model";
    const std::string cli = (fs::current_path() / "app" / "parallax-cli").string();
    int status = 0;
    try {
        const auto start = std::chrono::steady_clock::now();
        const ModelDims dims = writeCheckpoint(o, folder);
        int64_t params = 0;
        for (const ModelTensor& t : qwen2Tensors(dims)) params += t.elements();
        const double fp32MiB = double(params) * 4.0 / (1024.0 * 1024.0);
        std::printf("checkpoint: %.2fB parameters, %.0f MiB in fp32, written in %.1f s to %s\n", double(params) / 1e9,
                    fp32MiB, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                    folder.c_str());
        std::printf("%-8s %5s %5s %9s %14s %13s\n", "layout", "ranks", "rank", "load s", "peak RSS MiB",
                    "share MiB");
        for (const std::string& name : o.layouts) {
            const Layout* layout = nullptr;
            for (const Layout& l : kLayouts)
                if (name == l.name) layout = &l;
            if (!layout) throw std::runtime_error("unknown layout " + name + " (one, pp2, tp2, tp2pp2)");
            const fs::path spec = root / (name + ".toml");
            writeText(spec, specText(*layout, folder.string()));
            const std::string store = (root / (name + ".db")).string();
            const testing::ProcessResult run = testing::runProcess({cli, "--store", store, "run", spec.string()});
            if (run.exitCode != 0) {
                std::printf("%-8s failed (exit %d):\n%s\n", name.c_str(), run.exitCode, run.output.c_str());
                status = 1;
                continue;
            }
            const int ranks = layout->tp * layout->pp;
            for (const RankLoad& l : loads(store))
                std::printf("%-8s %5d %5d %9.1f %14.0f %13.0f\n", name.c_str(), ranks, l.rank, l.seconds, l.peakMiB,
                            fp32MiB / ranks);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_load: %s\n", e.what());
        status = 1;
    }
    if (!o.keep) fs::remove_all(root);
    return status;
}
