// Qwen-Image's VAE refusing what it cannot use, with messages that name the file, the tensor or
// the field and the fix: a weights file cut short, a tensor missing, of another shape or of an
// integer type, images whose sides are not multiples of 8 (config.json: tests/core/spec).

#include "tests/trainer/models/QwenImageVaeTestSupport.h"
#include "trainer/models/QwenImageVaeWeights.h"

#include <algorithm>
#include <filesystem>
#include <functional>

namespace parallax {
namespace {

using testing::QwenImageVaeTest;

// The message loadQwenImageVae throws for `folder` ("" when it loads).
std::string loadError(const std::string& folder) {
    try {
        loadQwenImageVae(folder);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Rewrites the folder's weights file with `change` applied to its tensors (views of the old file,
// which stays mapped until the new one has replaced it).
void rewriteWeights(const std::string& folder, const std::function<void(std::vector<TensorData>&)>& change) {
    const std::string path = folder + "/diffusion_pytorch_model.safetensors";
    const SafetensorsFile old(path);
    std::vector<TensorData> tensors;
    for (const TensorInfo& t : old.tensors()) tensors.push_back({t.name, t.dtype, t.shape, old.view(t).data});
    change(tensors);
    writeSafetensors(path, tensors);
}

TensorData& tensorNamed(std::vector<TensorData>& tensors, const std::string& name) {
    for (TensorData& t : tensors)
        if (t.name == name) return t;
    throw std::logic_error("no tensor " + name);
}

TEST_F(QwenImageVaeTest, AWeightsFileCutShortIsNamedWithTheFix) {
    const std::string folder = makeVae("vae");
    const std::string file = folder + "/diffusion_pytorch_model.safetensors";
    std::filesystem::resize_file(file, std::filesystem::file_size(file) / 2);
    const std::string error = loadError(folder);
    EXPECT_TRUE(has(error, file)) << error;
    EXPECT_TRUE(has(error, "fetch the file again")) << error;
}

TEST_F(QwenImageVaeTest, MissingMisshapenAndIntegerTensorsAreEachNamed) {
    const std::string folder = makeVae("vae");
    const std::vector<int32_t> ints(3, 1);
    const std::vector<float> nine(9, 0.0f);
    rewriteWeights(folder, [&](std::vector<TensorData>& tensors) {
        tensors.erase(std::remove_if(tensors.begin(), tensors.end(),
                                     [](const TensorData& t) { return t.name == "decoder.mid_block.attentions.0.proj.weight"; }),
                      tensors.end());
        tensorNamed(tensors, "encoder.conv_in.bias") = {"encoder.conv_in.bias", Dtype::F32, {9}, nine.data()};
        tensorNamed(tensors, "decoder.conv_out.bias") = {"decoder.conv_out.bias", Dtype::I32, {3}, ints.data()};
    });
    const std::string error = loadError(folder);
    EXPECT_TRUE(has(error, "tensor \"decoder.mid_block.attentions.0.proj.weight\" [32, 32, 1, 1] is missing")) << error;
    EXPECT_TRUE(has(error, "tensor \"encoder.conv_in.bias\" has shape [9]; config.json gives [8]")) << error;
    EXPECT_TRUE(has(error, "tensor \"decoder.conv_out.bias\" is I32; Parallax reads F32, BF16 and F16")) << error;
    EXPECT_TRUE(has(error, folder + "/diffusion_pytorch_model.safetensors")) << error;

    // The encoder alone reads none of the decoder's tensors, so only its own problem stops it.
    QwenImageVaeOptions encoderOnly;
    encoderOnly.decoder = false;
    try {
        loadQwenImageVae(folder, encoderOnly);
        FAIL() << "a misshapen encoder tensor loaded";
    } catch (const std::invalid_argument& e) {
        EXPECT_TRUE(has(e.what(), "encoder.conv_in.bias")) << e.what();
        EXPECT_FALSE(has(e.what(), "decoder.")) << e.what();
    }
}

TEST_F(QwenImageVaeTest, ImageSidesThatAreNotMultiplesOf8AreRefused) {
    const auto vae = loadQwenImageVae(makeVae("vae"));
    try {
        vae->encode(torch::zeros({1, 3, 20, 16}));
        FAIL() << "20 x 16 images encoded";
    } catch (const std::invalid_argument& e) {
        EXPECT_TRUE(has(e.what(), "images are 20 x 16 (H x W); both sides must be multiples of 8")) << e.what();
    }
    EXPECT_THROW(vae->encode(torch::zeros({1, 4, 16, 16})), std::invalid_argument);  // not RGB
    EXPECT_THROW(vae->encode(torch::zeros({3, 16, 16})), std::invalid_argument);     // no batch axis
    EXPECT_THROW(vae->decode(torch::zeros({1, 4, 2, 2})), std::invalid_argument);    // not z_dim channels
    EXPECT_THROW(vae->decode(torch::zeros({1, 16, 2, 2}, torch::kInt64)), std::invalid_argument);
}

} // namespace
} // namespace parallax
