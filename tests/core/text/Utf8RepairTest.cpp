#include "core/text/ByteLevel.h"
#include "core/text/Utf8Repair.h"

#include <gtest/gtest.h>

#include <set>

using namespace parallax;

namespace {

const std::string kFFFD = "\xEF\xBF\xBD";

TEST(Utf8Repair, KeepsWellFormedText) {
    for (const std::string& s : {std::string(""), std::string("plain ASCII"), std::string("日本語 and 😀 👨‍👩‍👧"),
                                std::string("nul\0inside", 10), std::string("\xF4\x8F\xBF\xBF")}) {
        EXPECT_TRUE(isValidUtf8(s));
        EXPECT_EQ(repairUtf8(s), s);
    }
}

// Unicode 15, chapter 3, table 3-8: "U+FFFD for non-shortest form sequences" and its neighbours.
TEST(Utf8Repair, ReplacesEachMaximalSubpartOnce) {
    EXPECT_EQ(repairUtf8("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
              "a" + kFFFD + kFFFD + kFFFD + "b" + kFFFD + "c" + kFFFD + kFFFD + "d");
    EXPECT_EQ(repairUtf8("\xE2\x82"), kFFFD);                            // cut short: one
    EXPECT_EQ(repairUtf8("\xC0\x80"), kFFFD + kFFFD);                    // overlong: each byte
    EXPECT_EQ(repairUtf8("\xED\xA0\x80"), kFFFD + kFFFD + kFFFD);        // a surrogate
    EXPECT_EQ(repairUtf8("\xF4\x90\x80\x80"), kFFFD + kFFFD + kFFFD + kFFFD); // above U+10FFFF
    EXPECT_EQ(repairUtf8("\xF0\x9F\x98" "A"), kFFFD + "A");
    EXPECT_EQ(repairUtf8("\xE2\x28\xA1"), kFFFD + "(" + kFFFD);
    EXPECT_EQ(repairUtf8("ok\xFF"), "ok" + kFFFD);
    for (const char* bad : {"\xE2\x82", "\xC0\x80", "\xED\xA0\x80", "\xFF", "a\x80"})
        EXPECT_FALSE(isValidUtf8(bad)) << bad;
}

TEST(ByteLevel, EveryByteIsOneCharacterOfItsOwn) {
    const ByteLevel& alphabet = ByteLevel::instance();
    std::set<std::string> seen;
    for (int b = 0; b < 256; ++b) {
        const std::string& c = alphabet.charFor(static_cast<uint8_t>(b));
        EXPECT_TRUE(seen.insert(c).second) << b;
        std::string back;
        ASSERT_TRUE(alphabet.decode(c, back));
        EXPECT_EQ(back, std::string(1, static_cast<char>(b)));
    }
    EXPECT_EQ(alphabet.charFor(' '), "\xC4\xA0");   // U+0120 Ġ
    EXPECT_EQ(alphabet.charFor('\n'), "\xC4\x8A");  // U+010A Ċ
    EXPECT_EQ(alphabet.charFor('A'), "A");
    EXPECT_EQ(alphabet.charFor(0xAD), "\xC5\x83");  // soft hyphen: U+0143, the 68th replaced byte
    std::string bytes;
    EXPECT_FALSE(alphabet.decode("\xE4\xB8\x80", bytes)) << "a CJK character is not in the alphabet";
}

} // namespace
