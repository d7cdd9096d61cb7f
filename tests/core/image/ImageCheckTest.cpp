// The dataset check: a list of files with good and bad images among them gives exactly the bad
// ones, each with its reason, in the list's order.
#include "core/image/ImageCheck.h"
#include "core/util/Files.h"
#include "tests/core/image/ImageTools.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

using namespace parallax;
using namespace parallax::testing;

namespace {

TEST(ImageCheck, NamesEveryBadImageAndOnlyThose) {
    REQUIRE_CONVERT();
    TempDir dir;
    const std::string d = dir.path();
    const Image16 picture = testPicture(40, 30, 3, 90);
    const std::string jpeg = makeImage(d, "good.jpg", picture, 8, {});
    const std::string png = makeImage(d, "good.png", picture, 8, {"PNG24:"});
    const std::string webp = makeImage(d, "good.webp", picture, 8, {});
    const std::string bytes = readFile(jpeg);
    writeFileBytes(d + "/cut.jpg", bytes.substr(0, bytes.size() * 2 / 3));
    writeFileBytes(d + "/caption.png", "a dog on a beach\n");
    writeFileBytes(d + "/empty.webp", "");
    createDirectories(d + "/folder.png");
    const std::vector<std::string> paths = {jpeg, d + "/cut.jpg", png, d + "/caption.png", webp,
                                            d + "/empty.webp", d + "/missing.jpg", d + "/folder.png"};
    const ImageCheckResult result = checkImages(paths);
    EXPECT_EQ(result.checked, paths.size());
    EXPECT_EQ(result.good(), 3u);
    ASSERT_EQ(result.problems.size(), 5u);
    const std::vector<std::pair<std::string, std::string>> expected = {
        {d + "/cut.jpg", "truncated JPEG (premature end of data segment: the file ends inside the image data)"},
        {d + "/caption.png", "a text file, not an image (only JPEG, PNG and WebP images are read; convert it to one of them)"},
        {d + "/empty.webp", "empty file (0 bytes), not an image"},
        {d + "/missing.jpg", "no such file"},
        {d + "/folder.png", "a folder, not an image file"},
    };
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(result.problems[i].path, expected[i].first);
        EXPECT_EQ(result.problems[i].reason, expected[i].second);
    }
}

} // namespace
