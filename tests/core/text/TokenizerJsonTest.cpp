// Tokenizer files Parallax must refuse, each with a message that names the file and says why.
#include "core/text/Tokenizer.h"
#include "core/text/TokenizerError.h"
#include "core/util/Files.h"
#include "tests/core/text/TinyTokenizer.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

using namespace parallax;
using parallax::testing::TinyTokenizer;
using Json = nlohmann::json;

namespace {

// The message loading `json` gives; the test fails when it loads.
std::string refusal(const Json& json) {
    try {
        Tokenizer::fromJson(json.dump(), "model/tokenizer.json");
    } catch (const TokenizerError& e) {
        return e.what();
    }
    ADD_FAILURE() << "loaded: " << json.dump().substr(0, 300);
    return {};
}

void expectMentions(const std::string& message, std::initializer_list<const char*> words) {
    for (const char* w : words)
        EXPECT_NE(message.find(w), std::string::npos) << "\"" << w << "\" missing from: " << message;
}

Json tiny() {
    TinyTokenizer t;
    t.merges = {{"a", "b"}};
    return t.json();
}

TEST(TokenizerJson, RefusesOtherFamiliesSayingWhatIsRead) {
    Json wordPiece = tiny();
    wordPiece["model"] = {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"vocab", {{"[UNK]", 0}}}};
    expectMentions(refusal(wordPiece), {"model/tokenizer.json", "model.type is WordPiece", "byte-level BPE"});

    Json unigram = tiny();
    unigram["model"] = {{"type", "Unigram"}, {"vocab", Json::array({Json::array({"a", -1.0})})}};
    expectMentions(refusal(unigram), {"model/tokenizer.json", "Unigram", "sentencepiece", "byte-level BPE"});

    Json metaspace = tiny(); // Llama 2 and Mistral: a sentencepiece BPE
    metaspace["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "first"}};
    expectMentions(refusal(metaspace), {"pre_tokenizer is Metaspace", "sentencepiece", "byte-level BPE"});

    Json bert = tiny();
    bert["normalizer"] = {{"type", "BertNormalizer"}, {"lowercase", true}};
    expectMentions(refusal(bert), {"normalizer is BertNormalizer", "NFC"});

    Json decoder = tiny();
    decoder["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}};
    expectMentions(refusal(decoder), {"decoder is WordPiece"});

    Json noByteLevel = tiny();
    noByteLevel["pre_tokenizer"]["pretokenizers"].erase(1);
    noByteLevel["pre_tokenizer"]["pretokenizers"].push_back({{"type", "Whitespace"}});
    expectMentions(refusal(noByteLevel), {"pre_tokenizer.pretokenizers[1] is Whitespace"});

    Json dropout = tiny();
    dropout["model"]["dropout"] = 0.1;
    expectMentions(refusal(dropout), {"model.dropout", "null"});
}

TEST(TokenizerJson, NamesTheBrokenField) {
    Json unknownMerge = tiny();
    unknownMerge["model"]["merges"].push_back({"zz", "q"});
    expectMentions(refusal(unknownMerge), {"model/tokenizer.json", "model.merges[1]", "\"zz\"", "not in model.vocab"});

    Json badString = tiny();
    badString["model"]["merges"] = Json::array({"a b c"});
    expectMentions(refusal(badString), {"model.merges[0]", "one space"});

    Json shortPair = tiny();
    shortPair["model"]["merges"] = Json::array({Json::array({"a"})});
    expectMentions(refusal(shortPair), {"model.merges[0] must be a pair of strings"});

    Json numbers = tiny();
    numbers["model"]["merges"] = Json::array({Json::array({1, 2})});
    expectMentions(refusal(numbers), {"model.merges[0] must be a string or a pair of strings"});

    Json vocabList = tiny();
    vocabList["model"]["vocab"] = Json::array({"a", "b"});
    expectMentions(refusal(vocabList), {"model.vocab must be an object"});

    Json floatId = tiny();
    floatId["model"]["vocab"]["x"] = 1.5;
    expectMentions(refusal(floatId), {"model.vocab[\"x\"] must be an id"});

    Json noMerges = tiny();
    noMerges["model"].erase("merges");
    expectMentions(refusal(noMerges), {"model.merges is missing"});

    Json hugeId = tiny();
    hugeId["model"]["vocab"]["x"] = 2000000000;
    expectMentions(refusal(hugeId), {"model.vocab[\"x\"]", "2000000000"});

    Json negative = tiny();
    negative["added_tokens"] = Json::array({{{"id", -5}, {"content", "<x>"}, {"special", true}}});
    expectMentions(refusal(negative), {"added_tokens[0].id"});

    Json badPattern = tiny();
    badPattern["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "([a-";
    expectMentions(refusal(badPattern), {"pre_tokenizer.pretokenizers[0].pattern", "does not compile"});

    Json untyped = tiny(); // older files: no model.type, merges make it BPE
    untyped["model"].erase("type");
    EXPECT_EQ(Tokenizer::fromJson(untyped.dump(), "untyped").mergeCount(), 1u);
    untyped["model"].erase("merges");
    expectMentions(refusal(untyped), {"model.type is missing"});

    expectMentions(refusal(Json::array()), {"model/tokenizer.json", "JSON object"});
    expectMentions(refusal(Json::object()), {"model is missing"});
}

TEST(TokenizerJson, CorruptFilesAreNamed) {
    parallax::testing::TempDir dir;
    const std::string file = joinPath(dir.path(), "tokenizer.json");
    const std::string whole = tiny().dump();
    writeFileAtomic(file, whole.substr(0, whole.size() / 2)); // cut short, as by a full disk
    try {
        Tokenizer::load(dir.path());
        FAIL() << "a truncated tokenizer.json loaded";
    } catch (const TokenizerError& e) {
        expectMentions(e.what(), {file.c_str(), "not valid JSON"});
    }
    writeFileAtomic(file, whole);
    EXPECT_EQ(Tokenizer::load(dir.path()).source(), file); // the folder finds it
    EXPECT_EQ(Tokenizer::load(file).mergeCount(), 1u);

    const std::string empty = joinPath(dir.path(), "empty");
    createDirectories(empty);
    try {
        Tokenizer::load(empty);
        FAIL();
    } catch (const TokenizerError& e) {
        expectMentions(e.what(), {empty.c_str(), "has no tokenizer.json"});
    }
    EXPECT_THROW(Tokenizer::load(joinPath(dir.path(), "missing.json")), TokenizerError);
}

} // namespace
