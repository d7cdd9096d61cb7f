#include "core/telemetry/JsonReader.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace parallax;

TEST(JsonReader, ReadsStringsWithEscapes) {
    JsonReader r(R"("a\"b\\c\/d\n\t\u00e9\ud83d\ude00x")");
    std::string s;
    ASSERT_TRUE(r.readString(s)) << r.error();
    EXPECT_EQ(s, "a\"b\\c/d\n\t\xC3\xA9\xF0\x9F\x98\x80x");
    EXPECT_TRUE(r.atEnd());
}

TEST(JsonReader, LoneSurrogatesBecomeReplacementCharacters) {
    JsonReader r(R"("\ud800x\udc00")");
    std::string s;
    ASSERT_TRUE(r.readString(s));
    EXPECT_EQ(s, "\xEF\xBF\xBDx\xEF\xBF\xBD");
}

TEST(JsonReader, StringErrors) {
    std::string s;
    JsonReader truncated(R"("abc)");
    EXPECT_FALSE(truncated.readString(s));
    EXPECT_NE(truncated.error().find("truncated"), std::string::npos);
    JsonReader control("\"a\x01\"");
    EXPECT_FALSE(control.readString(s));
    EXPECT_NE(control.error().find("control character"), std::string::npos);
    JsonReader badEscape(R"("\q")");
    EXPECT_FALSE(badEscape.readString(s));
    JsonReader badHex(R"("\u12g4")");
    EXPECT_FALSE(badHex.readString(s));
}

TEST(JsonReader, Numbers) {
    double d = 0;
    JsonReader a("-12.5e-1");
    ASSERT_TRUE(a.readDouble(d));
    EXPECT_DOUBLE_EQ(d, -1.25);
    JsonReader huge("1e999");
    ASSERT_TRUE(huge.readDouble(d));
    EXPECT_TRUE(std::isinf(d) && d > 0);
    JsonReader nan("NaN");
    ASSERT_TRUE(nan.readDouble(d));
    EXPECT_TRUE(std::isnan(d));
    JsonReader negInf("-Infinity");
    ASSERT_TRUE(negInf.readDouble(d));
    EXPECT_TRUE(std::isinf(d) && d < 0);
    for (const char* bad : {"01", "1.", "-", ".5", "1e", "+1", "0x10"}) {
        JsonReader r(bad);
        double v = 0;
        EXPECT_TRUE(!r.readDouble(v) || !r.atEnd()) << bad;
    }
}

TEST(JsonReader, Integers) {
    int64_t v = 0;
    JsonReader plain("9223372036854775807");
    ASSERT_TRUE(plain.readInt64(v));
    EXPECT_EQ(v, INT64_MAX);
    JsonReader exp("3e2");
    ASSERT_TRUE(exp.readInt64(v));
    EXPECT_EQ(v, 300);
    JsonReader whole("7.0");
    ASSERT_TRUE(whole.readInt64(v));
    EXPECT_EQ(v, 7);
    JsonReader over("9223372036854775808");
    EXPECT_FALSE(over.readInt64(v));
    EXPECT_NE(over.error().find("out of range"), std::string::npos);
    JsonReader overExp("1e19");
    EXPECT_FALSE(overExp.readInt64(v));
    JsonReader fraction("2.5");
    EXPECT_FALSE(fraction.readInt64(v));
}

TEST(JsonReader, SkipsNestedValuesAndLimitsDepth) {
    JsonReader ok(R"({"a":[1,{"b":[true,false,null,"x"]}],"c":{}} tail)");
    ASSERT_TRUE(ok.skipValue()) << ok.error();
    EXPECT_FALSE(ok.atEnd());
    std::string deep(JsonReader::kMaxDepth + 5, '[');
    deep += std::string(JsonReader::kMaxDepth + 5, ']');
    JsonReader tooDeep(deep);
    EXPECT_FALSE(tooDeep.skipValue());
    EXPECT_NE(tooDeep.error().find("nested deeper"), std::string::npos);
    JsonReader truncated(R"({"a":[1,2)");
    EXPECT_FALSE(truncated.skipValue());
    EXPECT_NE(truncated.error().find("truncated"), std::string::npos);
}
