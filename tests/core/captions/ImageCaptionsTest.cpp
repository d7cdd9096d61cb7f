// Image-caption datasets as people keep them: DiffSynth-Studio's metadata.csv, .json and .jsonl,
// a folder of images with same-name .txt captions, conversation files of image-caption pairs; and
// what each refuses, naming the file, the line and the field.

#include "core/captions/ImageCaptions.h"
#include "tests/core/conversations/PngFile.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace parallax {
namespace {

using testing::TempDir;

class Captions : public ::testing::Test {
protected:
    void SetUp() override {
        std::filesystem::create_directories(tmp.path() + "/img");
        for (const char* name : {"a", "b", "c"}) testing::writeRampPng(tmp.path() + "/img/" + std::string(name) + ".png", 40, 24, 1);
    }
    std::string write(const std::string& name, const std::string& text) {
        const std::string path = tmp.path() + "/" + name;
        std::ofstream(path, std::ios::binary) << text;
        return path;
    }
    std::string error(const std::string& path) {
        try {
            readImageCaptions(path);
        } catch (const CaptionError& e) {
            return e.what();
        }
        return "no error";
    }
    TempDir tmp;
};

TEST_F(Captions, DiffSynthCsvWithQuotesLineBreaksAndEditImages) {
    const std::string csv = write("metadata.csv", "\xEF\xBB\xBFimage,prompt,edit_image\n"
                                                  "img/a.png,\"a cat, sitting\",\n"
                                                  "img/b.png,\"two lines:\nsecond \"\"quoted\"\"\",img/c.png\r\n"
                                                  "img/c.png,plain,\n");
    const std::vector<CaptionSample> s = readImageCaptions(csv);
    ASSERT_EQ(s.size(), 3u);
    EXPECT_EQ(s[0].image, tmp.path() + "/img/a.png");
    EXPECT_EQ(s[0].prompt, "a cat, sitting");
    EXPECT_TRUE(s[0].edit_images.empty());
    EXPECT_EQ(s[1].prompt, "two lines:\nsecond \"quoted\"");
    ASSERT_EQ(s[1].edit_images.size(), 1u);
    EXPECT_EQ(s[1].edit_images[0], tmp.path() + "/img/c.png");
    EXPECT_EQ(s[2].source, csv + ":5") << "the row's first line, counting the line break inside quotes";
    // The folder holding metadata.csv reads it.
    EXPECT_EQ(readImageCaptions(tmp.path()).size(), 3u);
}

TEST_F(Captions, CsvProblemsAreNamedWithTheirLine) {
    EXPECT_NE(error(write("m1.csv", "file,text\nimg/a.png,x\n")).find("m1.csv:1: the header has no image column"),
              std::string::npos);
    EXPECT_NE(error(write("m2.csv", "image,prompt\nimg/a.png,x\nimg/zz.png,y\n")).find("m2.csv:3: image "), std::string::npos);
    EXPECT_NE(error(write("m3.csv", "image,prompt\nimg/a.png,\"open\n")).find("m3.csv:2: a quoted field is not closed"),
              std::string::npos);
    EXPECT_NE(error(write("m4.csv", "image,prompt\n,x\n")).find("m4.csv:2: the image field is empty"), std::string::npos);
}

TEST_F(Captions, DiffSynthJsonAndJsonl) {
    const std::string json = write("meta.json", R"([{"image": "img/a.png", "prompt": "A"},
        {"image": "img/b.png", "prompt": "B", "edit_image": ["img/a.png", "img/c.png"]}])");
    const auto s = readImageCaptions(json);
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[1].edit_images.size(), 2u);
    EXPECT_EQ(s[1].source, json + ": sample 2");
    const std::string jsonl = write("meta.jsonl", "{\"image\": \"img/a.png\", \"prompt\": \"A\"}\n\n"
                                                  "{\"image\": \"img/b.png\", \"prompt\": \"B\", \"edit_image\": \"img/c.png\"}\n");
    const auto l = readImageCaptions(jsonl);
    ASSERT_EQ(l.size(), 2u);
    EXPECT_EQ(l[1].source, jsonl + ":3");
    EXPECT_EQ(l[1].edit_images.at(0), tmp.path() + "/img/c.png");
    EXPECT_NE(error(write("bad.jsonl", "{\"image\": \"img/a.png\", \"prompt\": \"A\"}\n{\"image\": 3, \"prompt\": \"B\"}\n"))
                  .find("bad.jsonl:2: \"image\" is missing or not a path"),
              std::string::npos);
    EXPECT_NE(error(write("broken.jsonl", "{\"image\": \"img/a.png\", \"prompt\": \"A\"}\n{\"image\n")).find("broken.jsonl:2: not JSON"),
              std::string::npos);
    EXPECT_NE(error(write("edit.json", R"([{"image": "img/a.png", "prompt": "A", "edit_image": "img/none.png"}])"))
                  .find("edit_image " + tmp.path() + "/img/none.png is not a file"),
              std::string::npos);
}

TEST_F(Captions, AFolderOfImagesWithTxtCaptions) {
    const std::string img = tmp.path() + "/img";
    std::ofstream(img + "/a.txt") << "  first caption\n";
    std::ofstream(img + "/b.txt") << "second";
    const std::string missing = error(img);
    EXPECT_NE(missing.find("1 images have no caption (c.png)"), std::string::npos) << missing;
    std::ofstream(img + "/c.txt") << "third";
    std::ofstream(img + "/notes.txt") << "not a caption of anything";
    const auto s = readImageCaptions(img);
    ASSERT_EQ(s.size(), 3u);
    EXPECT_EQ(s[0].prompt, "first caption");
    EXPECT_EQ(s[2].image, img + "/c.png");
    EXPECT_NE(error(tmp.path() + "/nowhere").find("no such file or folder"), std::string::npos);
}

#ifdef PARALLAX_TEST_CONVERSATIONS
TEST_F(Captions, ConversationFilesOfImageCaptionPairs) {
    const std::string file = write("pairs.jsonl",
        R"({"image": "img/a.png", "conversations": [{"from": "human", "value": "<image>\nDescribe."}, {"from": "gpt", "value": " A ramp. "}]})"
        "\n"
        R"({"messages": [{"role": "user", "content": "<image>What?"}, {"role": "assistant", "content": "Noise."}], "images": ["img/b.png"]})"
        "\n");
    const auto s = readImageCaptions(file);
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0].prompt, "A ramp.");
    EXPECT_EQ(s[1].image, tmp.path() + "/img/b.png");
    EXPECT_NE(error(write("two.jsonl",
        R"({"messages": [{"role": "user", "content": "<image><image>?"}, {"role": "assistant", "content": "x"}], "images": ["img/a.png", "img/b.png"]})"
        "\n")).find("has one image"), std::string::npos);
}
#endif

} // namespace
} // namespace parallax
