// Base64 (RFC 4648), how a sample's PNG travels in its telemetry line: the RFC's test vectors, every
// byte value, what is refused, and a sample event through the line codec and back.
#include "core/telemetry/TelemetryCodec.h"
#include "core/util/Base64.h"

#include <gtest/gtest.h>

namespace parallax {
namespace {

std::vector<uint8_t> bytesOf(const std::string& s) { return {s.begin(), s.end()}; }

TEST(Base64, TheRfcVectors) {
    const std::pair<const char*, const char*> vectors[] = {{"", ""},         {"f", "Zg=="},     {"fo", "Zm8="},
                                                           {"foo", "Zm9v"},  {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
                                                           {"foobar", "Zm9vYmFy"}};
    for (const auto& [plain, coded] : vectors) {
        EXPECT_EQ(base64Encode(bytesOf(plain)), coded) << plain;
        EXPECT_EQ(base64Decode(coded), bytesOf(plain)) << coded;
    }
}

TEST(Base64, EveryByteRoundTripsAndBadTextIsRefused) {
    std::vector<uint8_t> all;
    for (int i = 0; i < 256; ++i) all.push_back(static_cast<uint8_t>(i));
    for (size_t n : {size_t(254), size_t(255), size_t(256)}) {
        const std::vector<uint8_t> part(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
        EXPECT_EQ(base64Decode(base64Encode(part)), part) << n;
    }
    for (const char* bad : {"Zg=", "Zm9v!A==", "Z===", "Zg==Zg==", "=Zg="})
        EXPECT_FALSE(base64Decode(bad)) << bad;
}

TEST(Base64, ASampleEventCarriesItsPngThroughTheLine) {
    SampleEvent e;
    e.step = 40;
    e.index = 1;
    e.width = 48;
    e.height = 32;
    e.png = base64Encode(bytesOf(std::string("\x89PNG\r\n\x1a\n", 8) + std::string(1000, '\0')));
    const DecodedLine line = decodeLine(encodeEvent(e));
    ASSERT_EQ(line.kind, DecodedLine::Kind::Event) << line.error;
    const auto* back = std::get_if<SampleEvent>(&line.event);
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(back->step, 40);
    EXPECT_EQ(back->index, 1);
    EXPECT_EQ(base64Decode(back->png)->size(), 1008u);
}

} // namespace
} // namespace parallax
