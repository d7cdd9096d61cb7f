// parallax-cache: a spec's image-caption dataset encoded once into its latent cache
// (trainer/cache/LatentCacheWriter.h).
//   parallax-cache SPEC.toml [--device cpu|cuda] [--bf16]
// `parallax-cli cache SPEC` runs this. Exit 0 when the cache is complete, 2 for a spec or dataset at
// fault (the message names the field, file or sample), 1 for anything else.

#include "core/spec/SpecIO.h"
#include "core/util/BuildId.h"
#include "trainer/cache/LatentCacheWriter.h"
#include "trainer/compat/HostHeap.h"

#include <CLI/CLI.hpp>

#include <iostream>

int main(int argc, char** argv) {
    using namespace parallax;
    keepFreedMemoryInTheHeap();
    std::string specPath, device = "cpu";
    bool bf16 = false;
    CLI::App app{"parallax-cache: a spec's image-caption dataset encoded once into its latent cache"};
    app.add_option("spec", specPath, "SPEC.toml")->required();
    app.add_option("--device", device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
    app.add_flag("--bf16", bf16, "The VAE and the text encoder in bf16");
    app.set_version_flag("--version", versionLine("parallax-cache"));
    CLI11_PARSE(app, argc, argv);
    try {
        if (device == "cuda" && !torch::cuda::is_available())
            throw std::invalid_argument("--device cuda: no GPU is visible to this build (use --device cpu)");
        const RunSpec spec = readSpecFile(specPath);
        LatentCacheOptions options;
        options.device = device == "cuda" ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
        options.dtype = bf16 ? torch::kBFloat16 : torch::kFloat32;
        const LatentCacheResult r =
            writeLatentCache(spec, options, [](const std::string& line) { std::cout << line << std::endl; });
        std::cout << r.folder << ": " << r.samples << " samples (" << r.encoded << " encoded now";
        if (r.resumed) std::cout << ", " << r.resumed << " already there";
        std::cout << ")";
        if (r.encoded) std::cout << " in " << static_cast<int64_t>(r.seconds + 0.5) << " s";
        std::cout << std::endl;
        for (const auto& [bucket, count] : r.buckets)
            std::cout << "  bucket " << bucket.width << " x " << bucket.height << ": " << count << " images" << std::endl;
        return 0;
    } catch (const std::invalid_argument& e) {
        std::cerr << "parallax-cache: " << e.what() << std::endl;
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "parallax-cache: " << e.what() << std::endl;
        return 1;
    }
}
