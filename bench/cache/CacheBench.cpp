// What `parallax-cli cache` spends per sample, on this machine's CPUs: images of SIDE x SIDE through
// Qwen-Image's VAE encoder at its published size (base_dim 96, stages 1, 2, 4, 4, two residual blocks
// each: diffusers' AutoencoderKLQwenImage), and captions through Qwen-Image's text encoder path
// (template, tokenizer, language model, final norm) with the language model of a Qwen2.5 preset
// (random weights; the published encoder, Qwen2.5-VL-7B's, does not fit this machine's memory in
// fp32: --text 7b where it does). fp32, after one warm-up of each. Prints one row each, with the
// thread count, as docs/benchmarks.md lists them.
//
//   bench_cache [--side 512] [--images 3] [--prompts 6] [--text 0.5b] [--threads N]
//   (from the build folder, as `make bench` runs it: the tokenizer is npm-oracle/qwen/tokenizer.json,
//   which the tests' text.oracle_install puts there)

#include "core/spec/ModelDims.h"
#include "core/text/Tokenizer.h"
#include "trainer/cache/QwenImageTextEncoder.h"
#include "trainer/models/QwenImageVae.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

using namespace parallax;
using Clock = std::chrono::steady_clock;

struct Options {
    int64_t side = 512, images = 3, prompts = 6, threads = 0;
    std::string text = "0.5b";
};

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--side") o.side = std::atoll(value.c_str());
        else if (flag == "--images") o.images = std::atoll(value.c_str());
        else if (flag == "--prompts") o.prompts = std::atoll(value.c_str());
        else if (flag == "--threads") o.threads = std::atoll(value.c_str());
        else if (flag == "--text") o.text = value;
        else {
            std::fprintf(stderr, "bench_cache: unknown option %s\n", flag.c_str());
            std::exit(2);
        }
    }
    return o;
}

double seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

// The published VAE's encoder with random weights of the declared shapes.
std::shared_ptr<QwenImageVae> publishedEncoder() {
    QwenImageVaeConfig config;
    config.latents_mean.assign(16, 0.0);
    config.latents_std.assign(16, 1.0);
    auto vae = std::make_shared<QwenImageVae>(config, true, false);
    torch::manual_seed(0);
    for (const auto& module : vae->modules()) {
        auto leaf = std::dynamic_pointer_cast<VaeLeaf>(module);
        if (!leaf) continue;
        for (const VaeLeaf::Declared& d : leaf->declared()) {
            int64_t fanIn = 1;
            for (size_t i = 1; i < d.shape.size(); ++i) fanIn *= d.shape[i];
            torch::Tensor value = d.name == "weight" && d.shape.size() > 1 ? torch::randn(d.shape) / std::sqrt(double(fanIn))
                                  : d.name == "bias"                       ? torch::randn(d.shape) * 0.01
                                                                           : torch::ones(d.shape);
            leaf->give(d.name, value);
        }
    }
    return vae;
}

void benchVae(const Options& o) {
    const auto vae = publishedEncoder();
    int64_t params = 0;
    for (const auto& p : vae->parameters()) params += p.numel();
    const torch::Tensor image = torch::rand({1, 3, o.side, o.side}) * 2 - 1;
    vae->encode(image); // warm-up
    const auto start = Clock::now();
    for (int64_t i = 0; i < o.images; ++i) vae->encode(image);
    const double s = seconds(start);
    std::printf("| VAE encoder (published size, %.1fM parameters) | %lld x %lld image | %d | %.3f images/s | %.2f s per image |\n",
                params / 1e6, static_cast<long long>(o.side), static_cast<long long>(o.side), torch::get_num_threads(),
                o.images / s, s / o.images);
}

void benchText(const Options& o) {
    const std::string tokenizerPath = "npm-oracle/qwen/tokenizer.json";
    if (!std::ifstream(tokenizerPath)) {
        std::printf("text encoder: skipped, %s is missing (ctest -R text.oracle_install puts it there)\n",
                    tokenizerPath.c_str());
        return;
    }
    ModelSpec spec;
    spec.kind = ModelKind::Qwen2;
    spec.preset = o.text;
    ModelDims dims = resolveModel(spec);
    dims.tie_embeddings = false; // the head is never run: only the final norm's states are read
    const auto model = buildModel(dims, 0);
    int64_t params = 0;
    for (const auto& p : model->parameters()) params += p.numel();
    const QwenImageTextEncoder encoder(model, Tokenizer::load(tokenizerPath), torch::kCPU, torch::kFloat32,
                                       "qwen2 preset " + o.text);
    const std::vector<std::string> captions = {
        "A lighthouse on a rocky coast at dusk, waves breaking below, warm light in the lantern room, a few gulls.",
        "Close-up of a bowl of ramen with a soft egg, spring onions and chili oil on a dark wooden table, steam rising.",
        "A street sign reading \"Main St\" beside a red brick building, bicycles parked along the kerb, overcast sky."};
    encoder.encode(captions[0]); // warm-up
    int64_t tokens = 0;
    const auto start = Clock::now();
    for (int64_t i = 0; i < o.prompts; ++i) tokens += encoder.encode(captions[static_cast<size_t>(i) % captions.size()]).size(0);
    const double s = seconds(start);
    std::printf("| text encoder (Qwen2.5 %s language model, %.2fB parameters) | prompts of %.0f states (+34 of the template) "
                "| %d | %.3f prompts/s | %.2f s per prompt |\n",
                o.text.c_str(), params / 1e9, double(tokens) / double(o.prompts), torch::get_num_threads(), o.prompts / s,
                s / o.prompts);
}

} // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    if (o.threads > 0) torch::set_num_threads(static_cast<int>(o.threads));
    torch::NoGradGuard noGrad;
    std::printf("| part | input | threads | throughput | time |\n|---|---|---|---|---|\n");
    benchVae(o);
    benchText(o);
    return 0;
}
