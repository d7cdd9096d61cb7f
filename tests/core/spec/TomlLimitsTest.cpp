// The bounds on TOML text, on real files where a reader reads files: deep nesting and size are
// refused before the TOML library sees the text, and text that only looks deep (strings, comments,
// quoted keys, floats) reads as before.
#include "core/spec/ClusterProfile.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecOverrides.h"
#include "core/spec/TomlLimits.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace parallax {
namespace {

namespace fs = std::filesystem;

std::string repeated(const std::string& piece, int times) {
    std::string out;
    for (int i = 0; i < times; ++i) out += piece;
    return out;
}

// [d.d.d...] with `levels` parts.
std::string deepHeader(int levels) {
    return "name = \"deep\"\n[d" + repeated(".d", levels - 1) + "]\nx = 1\n";
}

std::string errorOf(const std::string& text, const std::string& source = "deep.toml") {
    try {
        checkTomlLimits(text, source);
    } catch (const SpecError& e) {
        return e.what();
    }
    return "";
}

class TempFolder {
public:
    TempFolder() {
        char tmpl[] = "/tmp/parallax-toml-limits-XXXXXX";
        if (mkdtemp(tmpl)) m_path = tmpl;
    }
    ~TempFolder() {
        std::error_code ec;
        fs::remove_all(m_path, ec);
    }
    std::string write(const std::string& name, const std::string& text) const {
        const fs::path p = m_path / name;
        std::ofstream(p, std::ios::binary) << text;
        return p.string();
    }

private:
    fs::path m_path;
};

TEST(TomlLimits, AThirtyThousandLevelHeaderIsRefusedNamingTheFileTheLineAndTheLimit) {
    TempFolder dir;
    const std::string path = dir.write("deep.toml", deepHeader(30000));
    try {
        readSpecFile(path);
        FAIL() << "a 30,000-level spec was read";
    } catch (const SpecError& e) {
        const std::string what = e.what();
        EXPECT_EQ(what.rfind(path + ":2: ", 0), 0u) << what;
        EXPECT_NE(what.find("deeper than 64 levels"), std::string::npos) << what;
    }
    std::vector<SpecIssue> unknown;
    EXPECT_THROW(readSpecFile(path, unknown), SpecError);
    EXPECT_THROW(parseSpec(deepHeader(30000), "deep.toml"), SpecError);
}

TEST(TomlLimits, EveryKindOfNestingCountsAndSixtyFourLevelsRead) {
    // Headers, arrays of tables, dotted keys, inline tables, arrays, and all of them together.
    EXPECT_EQ(errorOf("[d" + repeated(".d", 63) + "]\n"), "");
    EXPECT_NE(errorOf("[d" + repeated(".d", 64) + "]\n"), "");
    EXPECT_NE(errorOf("[d" + repeated(".d", 63) + "]\nkey = 1\n").find("deep.toml:2:"), std::string::npos);
    EXPECT_NE(errorOf("[[d" + repeated(".d", 63) + "]]\n"), "");
    EXPECT_NE(errorOf("a" + repeated(".a", 64) + " = 1\n"), "");
    EXPECT_NE(errorOf("a = " + repeated("{b = ", 64) + "1" + repeated("}", 64) + "\n"), "");
    EXPECT_EQ(errorOf("a = " + repeated("{b = ", 63) + "1" + repeated("}", 63) + "\n"), "");
    EXPECT_NE(errorOf("a = " + repeated("[", 65) + repeated("]", 65) + "\n"), "");
    EXPECT_NE(errorOf("a = [\n" + repeated("[\n", 70) + repeated("]\n", 70) + "]\n").find("deep.toml:65:"),
              std::string::npos);
    EXPECT_NE(errorOf("a = [{" + repeated("b.", 70) + "c = 1}]\n"), "");
    EXPECT_NE(errorOf("[t" + repeated(".t", 30) + "]\na" + repeated(".a", 20) + " = " + repeated("[", 20) +
                      repeated("]", 20) + "\n"),
              "");
}

TEST(TomlLimits, StringsCommentsAndQuotedKeysAreNotNesting) {
    const std::string deep = "[" + repeated("d.", 1000) + "d]";
    EXPECT_EQ(errorOf("a = \"" + deep + "\"\n"), "");
    EXPECT_EQ(errorOf("a = '" + deep + "'\n"), "");
    EXPECT_EQ(errorOf("# " + deep + "\n"), "");
    EXPECT_EQ(errorOf("a = \"\"\"\n" + deep + "\n\"\"\"\n"), "");
    EXPECT_EQ(errorOf("a = '''\n" + deep + "\n'''\n"), "");
    EXPECT_EQ(errorOf("a = \"\\\"" + deep + "\"\n"), "") << "an escaped quote does not end the string";
    EXPECT_EQ(errorOf("\"" + repeated("a.", 1000) + "\" = 1\n"), "");
    EXPECT_EQ(errorOf("a = [" + repeated("1.5, ", 10000) + "2.5]\nt = 1979-05-27T07:32:00.5Z\n"), "");
    // After a string closes, what follows counts again: a multi-line string may end in two more quotes.
    EXPECT_NE(errorOf("a = \"\"\"x\"\"\"\"\"\n" + deep + "\n").find("deep.toml:2:"), std::string::npos);
    EXPECT_NE(errorOf("a = \"\"\"x \\\n  y\"\"\"\n" + deep + "\n").find("deep.toml:3:"), std::string::npos);
}

TEST(TomlLimits, AFileLargerThanTheLimitIsNotReadToItsEnd) {
    const std::string big(kMaxTomlBytes + 1, '\n');
    EXPECT_NE(errorOf(big).find("deep.toml: is larger than 4 MiB"), std::string::npos) << errorOf(big);
    EXPECT_EQ(errorOf(std::string(kMaxTomlBytes, '\n')), "");
    // An endless file: refused, not read until memory runs out.
    try {
        readSpecFile("/dev/zero");
        FAIL() << "/dev/zero was read as a spec";
    } catch (const SpecError& e) {
        EXPECT_NE(std::string(e.what()).find("/dev/zero: is larger than 4 MiB"), std::string::npos) << e.what();
    }
}

TEST(TomlLimits, ClusterProfilesAndSetValuesAreBoundedToo) {
    TempFolder dir;
    const std::string profile = dir.write("lab.toml", "hosts = [\"a:1\"]\n[ssh" + repeated(".x", 30000) + "]\n");
    try {
        readClusterProfile(profile);
        FAIL() << "a 30,000-level profile was read";
    } catch (const SpecError& e) {
        EXPECT_EQ(std::string(e.what()).rfind(profile + ":2: ", 0), 0u) << e.what();
    }
    EXPECT_THROW(readClusterProfile("/dev/zero"), SpecError);
    const RunSpec base = parseSpec("name = \"base\"\n", "base.toml");
    const std::string deepValue = "train.lr=" + repeated("{a = ", 100) + "1" + repeated("}", 100);
    try {
        applySpecOverrides(base, {deepValue});
        FAIL() << "a 100-level --set value was read";
    } catch (const SpecError& e) {
        EXPECT_EQ(std::string(e.what()).rfind("--set " + deepValue + ":1: ", 0), 0u) << e.what();
    }
}

// A file of a hundred thousand unknown keys: the first fifty warned of in the order of the file,
// then one warning that counts the rest (a hint for each took seconds).
TEST(TomlLimits, AHundredThousandUnknownKeysAreFiftyWarningsAndACount) {
    TempFolder dir;
    std::string text = "name = \"unknown\"\n";
    for (int i = 0; i < 100000; ++i) text += "k" + std::to_string(i) + " = 1\n";
    const std::string path = dir.write("unknown.toml", text);
    std::vector<SpecIssue> unknown;
    const RunSpec spec = readSpecFile(path, unknown);
    ASSERT_EQ(unknown.size(), 51u);
    EXPECT_EQ(unknown.front().message.rfind(path + ":2: k0: unknown key", 0), 0u) << unknown.front().message;
    EXPECT_EQ(unknown[49].message.rfind(path + ":51: k49: unknown key", 0), 0u) << unknown[49].message;
    EXPECT_EQ(unknown.back().field, "spec");
    EXPECT_EQ(unknown.back().message.rfind("99950 more unknown keys (100000 in all; the first 50 are listed)", 0), 0u)
        << unknown.back().message;
    EXPECT_TRUE(unknown.back().warning);
    const std::vector<SpecIssue> kept = unknownKeys(spec);
    ASSERT_EQ(kept.size(), 51u);
    EXPECT_EQ(kept.back().message, unknown.back().message);
}

TEST(TomlLimits, KeysKeptAtTheDeepestLevelReadWriteAndReadBack) {
    // Unknown keys are kept and written back; what is written back reads again within the limits.
    const std::string text = "name = \"kept\"\n[future" + repeated(".x", 59) + "]\nknob = [[1, 2], [3]]\n"
                             "[train]\nsteps = 7\n";
    const RunSpec spec = parseSpec(text, "kept.toml");
    EXPECT_EQ(spec.train.steps, 7);
    const RunSpec again = parseSpec(toToml(spec), "again.toml");
    EXPECT_EQ(again.preserved_toml, spec.preserved_toml);
    EXPECT_FALSE(unknownKeys(again).empty());
}

} // namespace
} // namespace parallax
