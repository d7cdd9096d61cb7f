// A folder of transformers' Qwen2Tokenizer files without tokenizer.json (vocab.json, merges.txt,
// tokenizer_config.json) read as the tokenizer.json it converts to, and the files Parallax must
// refuse, each named with what is wrong (Qwen's real files are compared in QwenTokenizerFilesTest).
#include "core/text/Tokenizer.h"
#include "core/text/TokenizerError.h"
#include "core/util/Files.h"
#include "tests/core/text/AddedTokensCompare.h"
#include "tests/core/text/Qwen2TokenizerFolder.h"
#include "tests/core/text/TinyTokenizer.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace parallax;
using parallax::testing::byteLevel;
using parallax::testing::expectSameAddedTokens;
using parallax::testing::TinyTokenizer;
using parallax::testing::writeQwen2TokenizerFolder;
using Json = nlohmann::json;
using Ids = std::vector<int32_t>;

namespace {

// A small tokenizer.json shaped like Qwen's, and its Qwen2Tokenizer files in tokenizer/.
struct Qwen2Folder {
    parallax::testing::TempDir dir;
    std::string folder = joinPath(dir.path(), "tokenizer");
    TinyTokenizer tiny;

    Qwen2Folder() {
        tiny.merges = {{" ", "t"}, {" t", "h"}, {" th", "e"}, {"e", "r"}, {"\xE4", "\xB8"}};
        tiny.add("<|endoftext|>").add("<|im_start|>").add("<|im_end|>").add("<think>", false);
        writeQwen2TokenizerFolder(tiny.json(), folder);
    }
    std::string file(const char* name) const { return joinPath(folder, name); }
    Json config() const { return Json::parse(readFile(file("tokenizer_config.json"))); }
    void write(const char* name, const std::string& text) const { writeFileAtomic(file(name), text); }
};

// The message loading `folder` gives; the test fails when it loads.
std::string refusal(const std::string& folder) {
    try {
        Tokenizer::load(folder);
    } catch (const TokenizerError& e) {
        return e.what();
    }
    ADD_FAILURE() << folder << " loaded";
    return {};
}

void expectMentions(const std::string& message, std::initializer_list<std::string> words) {
    for (const std::string& w : words)
        EXPECT_NE(message.find(w), std::string::npos) << "\"" << w << "\" missing from: " << message;
}

TEST(TokenizerFiles, ReadsAQwen2FolderAsItsTokenizerJson) {
    const Qwen2Folder f;
    const Tokenizer json = f.tiny.make();
    const Tokenizer files = Tokenizer::load(f.folder);
    EXPECT_EQ(files.source(), f.folder + " (vocab.json, merges.txt)");
    EXPECT_EQ(files.vocabularySize(), json.vocabularySize());
    EXPECT_EQ(files.mergeCount(), 5u);
    EXPECT_EQ(files.idCount(), json.idCount());
    expectSameAddedTokens(files, json);
    for (const std::string text : {"the other there, the end", "<|im_start|>user\n\xE4\xB8\x80 e\xCC\x81<|im_end|>\n",
                                   "<think>it's 12345  \t\r\n  x</think><|endoftext|>", "a\xFF" "b", ""}) {
        const Ids ids = files.encode(text);
        EXPECT_EQ(ids, json.encode(text)) << text;
        EXPECT_EQ(files.decode(ids), json.decode(ids)) << text;
    }
    EXPECT_EQ(files.tokenId("<|im_end|>"), f.tiny.idOfAdded(2));
    EXPECT_EQ(files.encode(" the"), (Ids{f.tiny.idOfMerge(2)}));

    writeFileAtomic(f.file("tokenizer.json"), f.tiny.json().dump()); // the tokenizer.json beside them comes first
    EXPECT_EQ(Tokenizer::load(f.folder).source(), f.file("tokenizer.json"));
}

// As Qwen2Tokenizer reads merges.txt: "#version" on the first line and blank lines skipped, line ends
// CRLF or LF; a merge written twice keeps its first rank, as the conversion to the fast tokenizer does.
TEST(TokenizerFiles, MergesTxtReadAsTransformersReadsIt) {
    const Qwen2Folder f;
    TinyTokenizer bc;
    bc.merges = {{"b", "c"}, {"a", "b"}};
    writeQwen2TokenizerFolder(bc.json(), f.folder);
    f.write("merges.txt", "#version: 0.2\r\nb c\r\n\r\n  \na b\nb c\n");
    const Tokenizer files = Tokenizer::load(f.folder);
    EXPECT_EQ(files.mergeCount(), 2u);
    for (const std::string text : {"abc", "ab", "bcab", "cabc"})
        EXPECT_EQ(files.encode(text), bc.make().encode(text)) << text;
    EXPECT_EQ(files.encode("abc"), (Ids{'a', bc.idOfMerge(0)}));

    f.write("merges.txt", "b c\na b"); // no version line, no final line break
    EXPECT_EQ(Tokenizer::load(f.folder).encode("abc"), (Ids{'a', bc.idOfMerge(0)}));
}

// Without added_tokens_decoder: added_tokens.json, each token special when a config names it.
TEST(TokenizerFiles, AddedTokensJsonWhenTheConfigHasNoDecoder) {
    const Qwen2Folder f;
    Json config = f.config();
    config.erase("added_tokens_decoder");
    f.write("tokenizer_config.json", config.dump());
    Json added = Json::object();
    for (size_t i = 0; i < 4; ++i)
        added[f.tiny.added_tokens[i]["content"].get<std::string>()] = f.tiny.idOfAdded(i);
    f.write("added_tokens.json", added.dump());
    f.write("special_tokens_map.json",
            Json({{"additional_special_tokens",
                   Json::array({"<|im_start|>", Json({{"content", "<|im_end|>"}, {"lstrip", false}})})}})
                .dump());
    const Tokenizer files = Tokenizer::load(f.folder);
    ASSERT_EQ(files.addedTokens().size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
        const AddedToken& t = files.addedTokens()[i];
        EXPECT_EQ(t.id, f.tiny.idOfAdded(i));
        EXPECT_EQ(t.special, i < 3) << t.content;
        EXPECT_EQ(t.normalized, i == 3) << t.content;
        EXPECT_FALSE(t.lstrip || t.rstrip || t.single_word) << t.content;
    }
    EXPECT_EQ(files.encode("a<|im_start|>b<think>"), (Ids{'a', f.tiny.idOfAdded(1), 'b', f.tiny.idOfAdded(3)}));
    EXPECT_EQ(files.decode(files.encode("x<|im_end|><think>"), true), "x<think>");

    std::remove(f.file("added_tokens.json").c_str()); // then no added tokens, and a named one is missing
    expectMentions(refusal(f.folder), {f.file("tokenizer_config.json"), "eos_token \"<|endoftext|>\"",
                                       "neither in vocab.json nor among the added tokens"});
}

TEST(TokenizerFiles, NamesTheMissingFile) {
    const Qwen2Folder f;
    const std::string merges = readFile(f.file("merges.txt")), vocab = readFile(f.file("vocab.json"));
    std::remove(f.file("merges.txt").c_str());
    expectMentions(refusal(f.folder),
                   {f.folder, "vocab.json but no merges.txt", "a tokenizer.json in the folder would also do"});
    f.write("merges.txt", merges);
    std::remove(f.file("vocab.json").c_str());
    expectMentions(refusal(f.folder),
                   {f.folder, "merges.txt but no vocab.json", "a tokenizer.json in the folder would also do"});
    f.write("vocab.json", vocab);
    const std::string config = readFile(f.file("tokenizer_config.json"));
    std::remove(f.file("tokenizer_config.json").c_str());
    expectMentions(refusal(f.folder), {f.folder, "no tokenizer_config.json", "Qwen2Tokenizer", "tokenizer.json"});
    f.write("tokenizer_config.json", config);
    EXPECT_EQ(Tokenizer::load(f.folder).mergeCount(), 5u);
}

TEST(TokenizerFiles, NamesTheBrokenMergesLine) {
    const Qwen2Folder f;
    const std::string merges = readFile(f.file("merges.txt"));
    const std::string mergesFile = f.file("merges.txt");
    // Cut short inside its last line (line 6: the version line, then five merges), as by a full disk.
    f.write("merges.txt", merges.substr(0, merges.rfind(' ')));
    expectMentions(refusal(f.folder), {mergesFile, "line 6", "not a merge, two tokens"});
    f.write("merges.txt", "#version: 0.2\n" + byteLevel(" ") + " t h\n");
    expectMentions(refusal(f.folder), {mergesFile, "line 2", "not a merge"});
    f.write("merges.txt", "#version: 0.2\n\ne r\nzz q\n");
    expectMentions(refusal(f.folder), {mergesFile, "line 4", "token \"zz\" is not in vocab.json"});
    f.write("merges.txt", "e r\n#version: 0.2\n"); // a version line elsewhere is a merge
    expectMentions(refusal(f.folder), {mergesFile, "line 2", "\"#version:\""});
}

TEST(TokenizerFiles, NamesTheBrokenVocabJson) {
    const Qwen2Folder f;
    const std::string vocabFile = f.file("vocab.json");
    const Json vocab = Json::parse(readFile(vocabFile));
    f.write("vocab.json", "[\"a\", \"b\"]");
    expectMentions(refusal(f.folder), {vocabFile, "must be a JSON object of token: integer id, not array"});
    Json stringId = vocab;
    stringId["x"] = "7";
    f.write("vocab.json", stringId.dump());
    expectMentions(refusal(f.folder), {vocabFile, "\"x\" has id \"7\"", "object of token: integer id"});
    Json negative = vocab;
    negative["x"] = -1;
    f.write("vocab.json", negative.dump());
    expectMentions(refusal(f.folder), {vocabFile, "\"x\" has id -1"});
    const std::string whole = vocab.dump();
    f.write("vocab.json", whole.substr(0, whole.size() / 2));
    expectMentions(refusal(f.folder), {vocabFile, "is not JSON"});
}

TEST(TokenizerFiles, RefusesOtherClassesSayingWhatIsRead) {
    const Qwen2Folder f;
    const std::string configFile = f.file("tokenizer_config.json");
    Json config = f.config();
    config["tokenizer_class"] = "GPT2Tokenizer";
    f.write("tokenizer_config.json", config.dump());
    expectMentions(refusal(f.folder), {configFile, "tokenizer_class is GPT2Tokenizer", "Qwen2Tokenizer",
                                       "tokenizer.json in the folder would also do"});
    config.erase("tokenizer_class");
    f.write("tokenizer_config.json", config.dump());
    expectMentions(refusal(f.folder), {configFile, "tokenizer_class is missing"});
    config["tokenizer_class"] = "Qwen2TokenizerFast";
    config["add_prefix_space"] = true;
    f.write("tokenizer_config.json", config.dump());
    expectMentions(refusal(f.folder), {configFile, "add_prefix_space is true"});
    config["add_prefix_space"] = false;
    f.write("tokenizer_config.json", config.dump());
    EXPECT_EQ(Tokenizer::load(f.folder).mergeCount(), 5u) << "Qwen2TokenizerFast reads the same files";
}

TEST(TokenizerFiles, NamesTheBrokenConfigField) {
    const Qwen2Folder f;
    const std::string configFile = f.file("tokenizer_config.json");
    const Json config = f.config();
    Json badKey = config;
    badKey["added_tokens_decoder"]["abc"] = {{"content", "<x>"}};
    f.write("tokenizer_config.json", badKey.dump());
    expectMentions(refusal(f.folder), {configFile, "added_tokens_decoder[\"abc\"]", "token id"});
    Json badFlag = config;
    badFlag["added_tokens_decoder"][std::to_string(f.tiny.idOfAdded(0))]["special"] = "yes";
    f.write("tokenizer_config.json", badFlag.dump());
    expectMentions(refusal(f.folder), {configFile, ".special must be true or false"});
    Json noContent = config;
    noContent["added_tokens_decoder"][std::to_string(f.tiny.idOfAdded(0))].erase("content");
    f.write("tokenizer_config.json", noContent.dump());
    expectMentions(refusal(f.folder), {configFile, "non-empty \"content\""});
    Json unknownEos = config;
    unknownEos["eos_token"] = "<|nope|>";
    f.write("tokenizer_config.json", unknownEos.dump());
    expectMentions(refusal(f.folder), {configFile, "eos_token \"<|nope|>\" is neither in vocab.json"});
    f.write("tokenizer_config.json", "{\"tokenizer_class\": ");
    expectMentions(refusal(f.folder), {configFile, "is not JSON"});
}

} // namespace
