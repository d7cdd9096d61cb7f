// Qwen-Image's text encoder: prompts through the published template and Qwen's real tokenizer.json,
// states from the language model of a Qwen2.5-VL folder (the reference's tiny checkpoint) equal to
// the independent PyTorch reference's last hidden state past the template's 34 tokens; truncation at
// 1024; clear errors for a folder without its parts, and tokenizer/ read in either form. Skips with a
// message where python3-torch or the tokenizer is missing.

#include "core/formats/SafetensorsFile.h"
#include "core/formats/SafetensorsWriter.h"
#include "core/text/Tokenizer.h"
#include "core/text/TokenizerError.h"
#include "core/util/Files.h"
#include "tests/core/text/Qwen2TokenizerFolder.h"
#include "tests/support/Process.h"
#include "tests/trainer/cache/TinyPipeline.h"
#include "tests/trainer/support/ReferencePython.h"
#include "trainer/cache/QwenImageTextEncoder.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace parallax {
namespace {

using testing::runProcess;

using testing::oracleTokenizer;
using testing::setPipelineClass;
using PipelineFolder = testing::TinyPipeline;

// The reference's last hidden states of several samples' ids, in one batch padded on the right
// (attention_mask 0), each sample's real positions.
std::vector<torch::Tensor> referenceHidden(const PipelineFolder& f, const std::vector<std::vector<int32_t>>& samples) {
    size_t longest = 0;
    for (const auto& ids : samples) longest = std::max(longest, ids.size());
    const int64_t b = static_cast<int64_t>(samples.size()), t = static_cast<int64_t>(longest);
    torch::Tensor ids = torch::zeros({b, t}, torch::kInt64), mask = torch::zeros({b, t}, torch::kInt64);
    for (int64_t i = 0; i < b; ++i) {
        const auto& s = samples[static_cast<size_t>(i)];
        const int64_t n = static_cast<int64_t>(s.size());
        ids[i].narrow(0, 0, n).copy_(torch::tensor(std::vector<int64_t>(s.begin(), s.end())));
        mask[i].narrow(0, 0, n).fill_(1);
    }
    const std::string in = f.tmp() + "/prompts.safetensors", out = f.tmp() + "/hidden.safetensors";
    writeSafetensors(in, {{"input_ids", Dtype::I64, ids.sizes().vec(), ids.data_ptr()},
                          {"attention_mask", Dtype::I64, mask.sizes().vec(), mask.data_ptr()}});
    const auto ran = runProcess({testing::kReferencePython, testing::referenceScript("run_reference.py"),
                                 f.path + "/text_encoder", in, out});
    EXPECT_EQ(ran.exitCode, 0) << ran.output;
    const torch::Tensor hidden = testing::readFloatTensor(SafetensorsFile(out), "hidden");
    std::vector<torch::Tensor> each;
    for (int64_t i = 0; i < b; ++i) each.push_back(hidden[i].narrow(0, 0, static_cast<int64_t>(samples[static_cast<size_t>(i)].size())));
    return each;
}

// The reference's last hidden states of one sample's ids with its images' patch rows (its own
// M-RoPE positions and vision tower).
torch::Tensor referenceHiddenWithImages(const PipelineFolder& f, const std::vector<int32_t>& sample,
                                        const std::vector<QwenImageRows>& images) {
    torch::Tensor ids = torch::tensor(std::vector<int64_t>(sample.begin(), sample.end())).unsqueeze(0);
    std::vector<float> values;
    std::vector<int64_t> grid;
    for (const QwenImageRows& r : images) {
        values.insert(values.end(), r.values.begin(), r.values.end());
        grid.insert(grid.end(), {r.frames, r.rows, r.columns});
    }
    const int64_t rowValues = images.front().rowValues;
    const std::vector<int64_t> pixelShape = {static_cast<int64_t>(values.size()) / rowValues, rowValues};
    const std::vector<int64_t> gridShape = {static_cast<int64_t>(images.size()), 3};
    const std::string in = f.tmp() + "/edit.safetensors", out = f.tmp() + "/edit-hidden.safetensors";
    writeSafetensors(in, {{"input_ids", Dtype::I64, ids.sizes().vec(), ids.data_ptr()},
                          {"pixel_values", Dtype::F32, pixelShape, values.data()},
                          {"image_grid_thw", Dtype::I64, gridShape, grid.data()}});
    const auto ran = runProcess({testing::kReferencePython, testing::referenceScript("run_reference.py"),
                                 f.path + "/text_encoder", in, out});
    EXPECT_EQ(ran.exitCode, 0) << ran.output;
    return testing::readFloatTensor(SafetensorsFile(out), "hidden")[0];
}

// An RGB image of width x height with smooth colour ramps and a few hard edges.
Image drawnImage(int width, int height, int seed) {
    Image im;
    im.width = width;
    im.height = height;
    im.channels = 3;
    im.samples.resize(static_cast<size_t>(width) * height * 3);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            uint8_t* p = im.row(y) + static_cast<size_t>(x) * 3;
            p[0] = static_cast<uint8_t>((x * 255) / std::max(1, width - 1));
            p[1] = static_cast<uint8_t>((y * 255) / std::max(1, height - 1));
            p[2] = static_cast<uint8_t>(((x / 7 + y / 5 + seed) % 2) * 200 + 20);
        }
    return im;
}

// Qwen-Image-Edit-2509's prompt (QwenImageEditPlusPipeline): two reference images of odd sizes as
// "Picture 1: " and "Picture 2: " before the prompt, each resized to about 384 x 384 and through
// the tower; the states past the 64 tokens of the template, the images' states included, equal the
// reference's. The ids are the template the pipeline writes with the processor's pads expanded.
TEST(QwenImageTextEncoder, AnEditPromptWithTwoImagesEqualsTheReferencePastItsTemplate) {
    PipelineFolder f;
    ASSERT_TRUE(f.problem.empty()) << f.problem;
    setPipelineClass(f.path, "QwenImageEditPlusPipeline");
    const QwenImageTextEncoder encoder(f.path);
    ASSERT_EQ(encoder.pipeline(), QwenImagePipeline::EditPlus);
    EXPECT_EQ(encoder.prompt().format().drop, 64);
    const std::vector<Image> images = {drawnImage(97, 61, 0), drawnImage(50, 80, 1)};
    const std::string prompt = "Put the cat of picture 2 on the sofa of picture 1.";
    std::vector<QwenImageRows> rows;
    std::vector<int64_t> pads;
    for (const Image& im : images) {
        rows.push_back(encoder.conditionRows(im));
        pads.push_back(rows.back().patchRows() / 4);
    }
    // 97 x 61 at about 384 x 384: 480 x 320 (multiples of 32), then smart_resize to 476 x 308: 34 x 22
    // patches of 14.
    EXPECT_EQ(editConditionSides(61, 97, 384 * 384).width, 480);
    EXPECT_EQ(editConditionSides(61, 97, 384 * 384).height, 320);
    EXPECT_EQ(rows[0].columns * 14, 476);
    EXPECT_EQ(rows[0].rows * 14, 308);
    const std::vector<int32_t> ids = encoder.prompt().ids(prompt, pads);
    std::string written =
        "<|im_start|>system\nDescribe the key features of the input image (color, shape, size, texture, objects, "
        "background), then explain how the user's text instruction should alter or modify the image. Generate a new "
        "image that meets the user's requirements while maintaining consistency with the original input where "
        "appropriate.<|im_end|>\n<|im_start|>user\n";
    for (size_t i = 0; i < pads.size(); ++i) {
        written += "Picture " + std::to_string(i + 1) + ": <|vision_start|>";
        for (int64_t k = 0; k < pads[i]; ++k) written += "<|image_pad|>";
        written += "<|vision_end|>";
    }
    written += prompt + "<|im_end|>\n<|im_start|>assistant\n";
    const Tokenizer tokenizer = Tokenizer::load(oracleTokenizer());
    EXPECT_EQ(ids, tokenizer.encode(written));

    const torch::Tensor mine = encoder.encodeEdit(prompt, images);
    ASSERT_EQ(mine.size(0), static_cast<int64_t>(ids.size()) - 64);
    const torch::Tensor want = referenceHiddenWithImages(f, ids, rows);
    EXPECT_LT(testing::relativeError(mine, want.narrow(0, 64, want.size(0) - 64)), 1e-5);
    // The images are read: other images give other states.
    const torch::Tensor other = encoder.encodeEdit(prompt, {drawnImage(97, 61, 1), images[1]});
    EXPECT_GT((other - mine).abs().max().item<double>(), 1e-4);
    // QwenImageEditPipeline takes one image, a text-to-image folder none.
    setPipelineClass(f.path, "QwenImageEditPipeline");
    const QwenImageTextEncoder edit(f.path);
    EXPECT_THROW(edit.encodeEdit(prompt, images), std::invalid_argument);
    EXPECT_EQ(edit.encodeEdit(prompt, {images[0]}).size(1), 64);
    setPipelineClass(f.path, "QwenImagePipeline");
    const QwenImageTextEncoder plain(f.path);
    try {
        plain.encodeEdit(prompt, {images[0]});
        FAIL() << "a text-to-image folder encoded a reference image";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("QwenImageEditPipeline"), std::string::npos) << e.what();
    }
}

TEST(QwenImageTextEncoder, PromptStatesEqualTheReferencesPastTheTemplate) {
    const PipelineFolder f;
    if (!f.problem.empty()) GTEST_SKIP() << f.problem;
    const QwenImageTextEncoder encoder(f.path);
    EXPECT_EQ(encoder.width(), 64);
    const std::vector<std::string> prompts = {"A red cube on a wooden table, soft light.",
                                              "Ein Schild mit der Aufschrift \"Café 24h\" — 夜の街.", ""};
    std::vector<std::vector<int32_t>> ids;
    for (const std::string& prompt : prompts) ids.push_back(encoder.prompt().ids(prompt));
    const std::vector<torch::Tensor> want = referenceHidden(f, ids);
    for (size_t i = 0; i < prompts.size(); ++i) {
        const torch::Tensor mine = encoder.encode(prompts[i]);
        ASSERT_EQ(mine.size(0), static_cast<int64_t>(ids[i].size()) - 34) << prompts[i];
        EXPECT_LT(testing::relativeError(mine, want[i].narrow(0, 34, want[i].size(0) - 34)), 1e-5) << prompts[i];
    }
    // Padded to the longest, with a mask; each row as encoded alone.
    const auto [states, mask] = encoder.encodeBatch({"short", "a somewhat longer prompt about a lighthouse at dusk"});
    ASSERT_EQ(states.dim(), 3);
    EXPECT_EQ(mask.sum(1)[0].item<int64_t>(), encoder.encode("short").size(0));
    EXPECT_EQ(mask.sum(1)[1].item<int64_t>(), states.size(1));
    const int64_t n = encoder.encode("short").size(0);
    EXPECT_TRUE(torch::equal(states[0].narrow(0, 0, n), encoder.encode("short")));
    EXPECT_EQ(states[0].narrow(0, n, states.size(1) - n).abs().sum().item<double>(), 0.0);
}

TEST(QwenImageTextEncoder, TokensAreThePublishedTemplatesAndAreCutAt1024PastIt) {
    if (!std::ifstream(oracleTokenizer())) GTEST_SKIP() << "Qwen's tokenizer.json is installed by the text.oracle_install test";
    const Tokenizer tokenizer = Tokenizer::load(oracleTokenizer());
    const QwenImagePrompt prompt(tokenizer, qwenImagePromptTemplate());
    // The template as the published pipeline writes it, encoded whole.
    const std::string written =
        "<|im_start|>system\nDescribe the image by detailing the color, shape, size, texture, quantity, text, spatial "
        "relationships of the objects and background:<|im_end|>\n<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n";
    const std::string text = "Two cats, one black, one white.";
    std::string filled = written;
    filled.replace(filled.find("{}"), 2, text);
    EXPECT_EQ(prompt.ids(text), tokenizer.encode(filled));
    std::string longText;
    for (int i = 0; i < 600; ++i) longText += "red blue ";
    const std::vector<int32_t> cut = prompt.ids(longText);
    EXPECT_EQ(cut.size(), 34u + 1024u);
    std::string longFilled = written;
    longFilled.replace(longFilled.find("{}"), 2, longText);
    const std::vector<int32_t> whole = tokenizer.encode(longFilled);
    EXPECT_TRUE(std::equal(cut.begin(), cut.end(), whole.begin()));
}

TEST(QwenImageTextEncoder, AFolderWithoutItsPartsIsNamed) {
    if (!std::ifstream(oracleTokenizer())) GTEST_SKIP() << "Qwen's tokenizer.json is installed by the text.oracle_install test";
    testing::TempDir tmp;
    const std::string folder = tmp.path() + "/pipeline";
    std::filesystem::create_directories(folder);
    try {
        QwenImageTextEncoder encoder(folder);
        FAIL() << "a folder without tokenizer/ loaded";
    } catch (const std::invalid_argument& e) {
        for (const char* w : {"tokenizer/", "tokenizer.json", "vocab.json, merges.txt"})
            EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << w << " missing from: " << e.what();
    }
    std::filesystem::create_directories(folder + "/tokenizer");
    std::ofstream(folder + "/tokenizer/vocab.json") << "{}";
    try {
        QwenImageTextEncoder encoder(folder);
        FAIL() << "a tokenizer folder with vocab.json alone loaded";
    } catch (const TokenizerError& e) {
        for (const char* w : {"no merges.txt", "tokenizer.json"})
            EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << w << " missing from: " << e.what();
    }
    // Either form of tokenizer/ loads: the published one (vocab.json, merges.txt, tokenizer_config.json)
    // and tokenizer.json; then the missing text_encoder/ is named.
    testing::writeQwen2TokenizerFolder(nlohmann::json::parse(readFile(oracleTokenizer())), folder + "/tokenizer");
    for (const bool withJson : {false, true}) {
        if (withJson)
            std::filesystem::copy_file(oracleTokenizer(), folder + "/tokenizer/tokenizer.json");
        try {
            QwenImageTextEncoder encoder(folder);
            FAIL() << "a folder without text_encoder/ loaded";
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("text_encoder/config.json"), std::string::npos) << e.what();
        }
    }
}

} // namespace
} // namespace parallax
