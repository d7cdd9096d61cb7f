// parallax-cli tokenize as a person runs it: lines in, ids out, and the errors it ends with.
#include "core/util/Files.h"
#include "tests/core/text/RedirectedProcess.h"
#include "tests/core/text/TinyTokenizer.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <memory>

using namespace parallax;
using namespace parallax::testing;

namespace {

std::string cli() { return buildDir() + "/app/parallax-cli"; }

struct CliRun {
    int code = -1;
    std::string out;
    std::string err;
};

CliRun tokenize(const TempDir& dir, const std::vector<std::string>& args, const std::string& input) {
    const std::string in = dir.path() + "/in", out = dir.path() + "/out", err = dir.path() + "/err";
    writeFileAtomic(in, input);
    std::vector<std::string> argv = {cli(), "tokenize"};
    argv.insert(argv.end(), args.begin(), args.end());
    CliRun r;
    r.code = runRedirected(argv, in, out, err);
    r.out = readFile(out);
    r.err = readFile(err);
    return r;
}

std::string ids(const Tokenizer& t, const std::string& text) {
    std::string s;
    for (const int32_t id : t.encode(text))
        s += (s.empty() ? "" : " ") + std::to_string(id);
    return s;
}

class TokenizeCli : public ::testing::Test {
protected:
    void SetUp() override {
        TinyTokenizer tiny;
        tiny.merges = {{"h", "i"}, {" ", "hi"}};
        tiny.add("<|endoftext|>");
        m_tokenizer = std::make_unique<Tokenizer>(tiny.make());
        writeFileAtomic(m_dir.path() + "/tokenizer.json", tiny.json().dump());
    }
    TempDir m_dir;
    std::unique_ptr<Tokenizer> m_tokenizer;
};

// One output line per input line: a CR and a NUL stay in their line, an empty line gives an empty
// line, and a last line without LF is still a line.
TEST_F(TokenizeCli, PrintsEachLinesIds) {
    const std::vector<std::string> lines = {"hi hi", "cr\rinside", "", std::string("nul\0x", 5), "bad \xFF<|endoftext|>",
                                            "last"};
    std::string input;
    for (const std::string& l : lines)
        input += l + "\n";
    input.pop_back();
    const CliRun r = tokenize(m_dir, {m_dir.path()}, input);
    ASSERT_EQ(r.code, 0) << r.err;
    std::string expected;
    for (const std::string& l : lines)
        expected += ids(*m_tokenizer, l) + "\n";
    EXPECT_EQ(r.out, expected);

    const CliRun back = tokenize(m_dir, {"--decode", m_dir.path() + "/tokenizer.json"}, r.out);
    ASSERT_EQ(back.code, 0) << back.err;
    EXPECT_EQ(back.out, "hi hi\ncr\rinside\n\n" + std::string("nul\0x", 5) + "\nbad \xEF\xBF\xBD<|endoftext|>\nlast\n");
}

TEST_F(TokenizeCli, ErrorsNameTheFileOrTheLine) {
    const std::string missing = m_dir.path() + "/none.json";
    CliRun r = tokenize(m_dir, {missing}, "x\n");
    EXPECT_EQ(r.code, 4);
    EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;

    nlohmann::json wordPiece = TinyTokenizer{}.json();
    wordPiece["model"]["type"] = "WordPiece";
    writeFileAtomic(m_dir.path() + "/wp.json", wordPiece.dump());
    r = tokenize(m_dir, {m_dir.path() + "/wp.json"}, "x\n");
    EXPECT_EQ(r.code, 4);
    EXPECT_NE(r.err.find("WordPiece"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("byte-level BPE"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");

    r = tokenize(m_dir, {"--decode", m_dir.path()}, "104 105\n1 x 2\n");
    EXPECT_EQ(r.code, 4);
    EXPECT_EQ(r.out, "hi\n") << "the lines before the bad one are printed";
    EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("\"x\""), std::string::npos) << r.err;

    r = tokenize(m_dir, {"--decode", m_dir.path()}, "99999\n");
    EXPECT_EQ(r.code, 4);
    EXPECT_NE(r.err.find("99999"), std::string::npos) << r.err;

    r = tokenize(m_dir, {}, "");
    EXPECT_EQ(r.code, 2) << "no tokenizer named: a usage error";
}

} // namespace
