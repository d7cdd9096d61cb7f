// model.kind = "qwen_image_vae" through the worker: the tiny VAE trained on Debian's Fashion-MNIST
// over two data-parallel ranks learns to give the clothes back, and `parallax-cli export`'s folder
// holds the checkpoint's weights with measured latent statistics, read back here and by the PyTorch
// reference (tests/reference, which reads diffusers' AutoencoderKLQwenImage layout).

#include "tests/trainer/models/QwenImageVaeTestSupport.h"
#include "tests/trainer/support/FashionMnistFiles.h"
#include "tests/trainer/support/SpecText.h"
#include "tests/trainer/support/WorkerRun.h"
#include "trainer/data/FashionMnistDataset.h"
#include "trainer/export/HfExport.h"
#include "trainer/models/QwenImageVaeWeights.h"
#include "trainer/train/Checkpoint.h"

#include <filesystem>
#include <numeric>

namespace parallax {
namespace {

using namespace testing; // the VAE tests' fixture and helpers, the worker runs

double meanOf(const std::vector<double>& v, size_t first, size_t count) {
    return std::accumulate(v.begin() + first, v.begin() + first + count, 0.0) / double(count);
}

TEST_F(QwenImageVaeTest, ARunOnClothesLearnsThemAndExportsAFolderTheReferenceReads) {
    ASSERT_TRUE(fashionMnistInstalled()) << kFashionMnistMissing;
    TinySpec spec;
    spec.kind = "qwen_image_vae";
    spec.data = "fashion-mnist";
    spec.steps = 60;
    spec.globalBatch = 16;
    spec.microBatch = 8;
    spec.dp = 2;
    spec.lr = 2e-3;
    const WorkerRun run = runWorker(spec.toToml(), 2, dir.path() + "/run");
    ASSERT_EQ(run.exitCode, 0) << run.output;
    const std::vector<double> losses = run.losses();
    ASSERT_EQ(losses.size(), 60u) << run.output;
    EXPECT_LT(meanOf(losses, 55, 5), 0.5 * meanOf(losses, 0, 5)) << "from " << losses.front() << " to " << losses.back();

    HfExportOptions o;
    o.run = run.runDir;
    o.out = dir.path() + "/vae";
    o.bf16 = false;
    std::vector<std::string> said;
    const HfExportResult exported = exportHfFolder(o, [&said](const std::string& line) { said.push_back(line); });
    EXPECT_TRUE(exported.diffusers);
    const auto vae = loadQwenImageVae(o.out);
    const CheckpointReader checkpoint(run.lastCheckpoint());
    for (const auto& p : vae->named_parameters())
        EXPECT_TRUE(torch::equal(p.value(), checkpoint.full("units.0.vae." + p.key(), "param"))) << p.key();
    EXPECT_NE(vae->config().latents_std, std::vector<double>(16, 1.0)) << "the statistics were measured";
    bool measured = false;
    for (const std::string& line : said) measured |= line.find("latent statistics from 1024 images") != std::string::npos;
    EXPECT_TRUE(measured);

    const torch::Tensor images = torch::tanh(seededNormal({2, 3, 32, 48}, 71));
    const SafetensorsFile want(runReference(o.out, {{"images", images}}, false));
    EXPECT_LT(relativeError(vae->encode(images), readFloatTensor(want, "latents")), 1e-5);
}

} // namespace
} // namespace parallax
