// The EXIF reader on blocks written here, both byte orders, and the eight turns on a 3 x 2 image
// whose every pixel is known.
#include "core/image/ExifOrientation.h"

#include <gtest/gtest.h>

using namespace parallax;

namespace {

std::vector<uint8_t> bytes(std::initializer_list<int> list) {
    std::vector<uint8_t> out;
    for (int b : list) out.push_back(static_cast<uint8_t>(b));
    return out;
}

// Two entries (ImageWidth first), Orientation `value` of `type`, in either byte order.
std::vector<uint8_t> block(bool little, int value, int type = 3) {
    auto u16 = [&](int v) { return little ? bytes({v & 255, v >> 8}) : bytes({v >> 8, v & 255}); };
    std::vector<uint8_t> b = little ? bytes({'I', 'I', 42, 0, 8, 0, 0, 0}) : bytes({'M', 'M', 0, 42, 0, 0, 0, 8});
    auto add = [&](const std::vector<uint8_t>& more) { b.insert(b.end(), more.begin(), more.end()); };
    add(u16(2));
    add(u16(0x0100)), add(u16(3)), add(little ? bytes({1, 0, 0, 0}) : bytes({0, 0, 0, 1})), add(u16(640)), add(u16(0));
    add(u16(0x0112)), add(u16(type)), add(little ? bytes({1, 0, 0, 0}) : bytes({0, 0, 0, 1}));
    if (type == 4) add(little ? bytes({value, 0, 0, 0}) : bytes({0, 0, 0, value}));
    else add(u16(value)), add(u16(0));
    add(bytes({0, 0, 0, 0}));
    return b;
}

TEST(ExifOrientation, ReadsBothByteOrdersWithOrWithoutTheExifPrefix) {
    for (bool little : {true, false}) {
        for (int o = 1; o <= 8; ++o) {
            std::vector<uint8_t> b = block(little, o);
            EXPECT_EQ(exifOrientation(b.data(), b.size()), o);
            std::vector<uint8_t> prefixed = bytes({'E', 'x', 'i', 'f', 0, 0});
            prefixed.insert(prefixed.end(), b.begin(), b.end());
            EXPECT_EQ(exifOrientation(prefixed.data(), prefixed.size()), o);
        }
        std::vector<uint8_t> asLong = block(little, 6, 4);
        EXPECT_EQ(exifOrientation(asLong.data(), asLong.size()), 6);
    }
}

TEST(ExifOrientation, DamagedOrOutOfRangeReadsOne) {
    for (int bad : {0, 9, 255}) {
        std::vector<uint8_t> b = block(true, bad);
        EXPECT_EQ(exifOrientation(b.data(), b.size()), 1) << bad;
    }
    std::vector<uint8_t> b = block(false, 6);
    for (size_t cut = 0; cut < b.size() - 6; ++cut) EXPECT_EQ(exifOrientation(b.data(), cut), 1) << cut;
    std::vector<uint8_t> farIfd = block(true, 6);
    farIfd[4] = 0xF0, farIfd[7] = 0x7F; // IFD0 far past the end
    EXPECT_EQ(exifOrientation(farIfd.data(), farIfd.size()), 1);
    EXPECT_EQ(exifOrientation(nullptr, 0), 1);
}

TEST(ExifOrientation, XmpOrientationInBothForms) {
    const std::string attribute = "<rdf:Description tiff:Orientation=\"8\"/>";
    const std::string element = "<tiff:Orientation>3</tiff:Orientation>";
    const std::string none = "<tiff:OrientationX>3</tiff:OrientationX>";
    auto read = [](const std::string& s) { return xmpOrientation(reinterpret_cast<const uint8_t*>(s.data()), s.size()); };
    EXPECT_EQ(read(attribute), 8);
    EXPECT_EQ(read(element), 3);
    EXPECT_EQ(read(none), 1);
    EXPECT_EQ(read("tiff:Orientation=\""), 1);
}

TEST(ExifOrientation, EachTurnPutsEveryPixelWhereExifSaysItShows) {
    // Stored:  a b c
    //          d e f
    Image in;
    in.width = 3;
    in.height = 2;
    in.channels = 1;
    in.samples = {'a', 'b', 'c', 'd', 'e', 'f'};
    const std::vector<std::pair<int, std::string>> shown = {
        {1, "abc/def"}, {2, "cba/fed"}, {3, "fed/cba"}, {4, "def/abc"},
        {5, "ad/be/cf"}, {6, "da/eb/fc"}, {7, "fc/eb/da"}, {8, "cf/be/ad"},
    };
    for (const auto& [o, rows] : shown) {
        const Image out = orientPixels(in, o);
        std::string text;
        for (int y = 0; y < out.height; ++y) {
            if (y) text += '/';
            text.append(reinterpret_cast<const char*>(out.row(y)), static_cast<size_t>(out.width));
        }
        EXPECT_EQ(text, rows) << "orientation " << o;
    }
}

} // namespace
