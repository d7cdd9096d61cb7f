// The reader against valid and hostile files: every broken rule is a FormatError naming the file
// (and the tensor at fault), never a crash, a hang or an allocation of what the file claims.
#include "core/formats/SafetensorsFile.h"
#include "tests/core/formats/SafetensorsFiles.h"
#include "tests/support/Process.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace parallax;
using namespace parallax::testing;

namespace {

class SafetensorsReader : public ::testing::Test {
protected:
    std::string file(const std::string& bytes) {
        const std::string path = dir.path() + "/case" + std::to_string(++count) + ".safetensors";
        writeBytes(path, bytes);
        return path;
    }
    // Opening `bytes` fails with a message naming the file, the tensor `tensor` (when given) and
    // containing `phrase`.
    void expectRefused(const std::string& bytes, const std::string& phrase, const std::string& tensor = "") {
        const std::string path = file(bytes);
        try {
            SafetensorsFile f(path);
            ADD_FAILURE() << "opened a broken file; expected: " << phrase;
        } catch (const FormatError& e) {
            const std::string what = e.what();
            EXPECT_EQ(e.file(), path);
            EXPECT_EQ(what.rfind(path + ": ", 0), 0u) << what;
            EXPECT_NE(what.find(phrase), std::string::npos) << what;
            EXPECT_EQ(e.tensor(), tensor) << what;
        }
    }
    void expectHeaderRefused(const std::string& header, const std::string& data, const std::string& phrase,
                             const std::string& tensor = "") {
        expectRefused(safetensorsBytes(header, data), phrase, tensor);
    }
    TempDir dir;
    int count = 0;
};

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
}

} // namespace

TEST_F(SafetensorsReader, HandsOutViewsIntoTheMappedFile) {
    const std::string path = file(safetensorsBytes(validHeader(), validData()));
    SafetensorsFile f(path);
    ASSERT_EQ(f.tensors().size(), 3u);
    EXPECT_EQ(f.tensors()[0].name, "weight"); // by offset
    EXPECT_EQ(f.tensors()[2].name, "mask");
    ASSERT_EQ(f.metadata().size(), 1u);
    EXPECT_EQ(f.metadata()[0], (std::pair<std::string, std::string>("format", "pt")));
    const std::string data = validData();
    const TensorView bias = f.view("bias");
    EXPECT_EQ(bias.dtype, Dtype::F16);
    EXPECT_EQ(bias.shape, std::vector<int64_t>{3});
    EXPECT_EQ(bias.byteSize, 6u);
    EXPECT_EQ(bias.fileOffset, f.dataOffset() + 24);
    EXPECT_EQ(std::memcmp(bias.data, data.data() + 24, 6), 0);
    // No copy: every view lies at its file offset from one page-aligned mapping.
    const TensorView weight = f.view("weight");
    const auto base = reinterpret_cast<uintptr_t>(weight.data) - weight.fileOffset;
    EXPECT_EQ(base % uintptr_t(::sysconf(_SC_PAGESIZE)), 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(bias.data) - bias.fileOffset, base);
    EXPECT_EQ(weight.strides(), (std::vector<int64_t>{3, 1}));
    EXPECT_EQ(weight.elementCount(), 6);
    EXPECT_EQ(f.find("absent"), nullptr);
    EXPECT_THROW(f.view("absent"), FormatError);
}

TEST_F(SafetensorsReader, AcceptsWhatTheFormatAllows) {
    // Tensors listed out of offset order, spaces around the JSON, a scalar, an empty tensor, no data.
    const std::string header = "  {" + entry("b", "U8", "[2]", "[4,6]") + "," + entry("a", "I32", "[]", "[0,4]") +
                               "," + entry("empty", "F64", "[0,1000000]", "[6,6]") + "}      ";
    SafetensorsFile f(file(safetensorsBytes(header, "abcdef")));
    ASSERT_EQ(f.tensors().size(), 3u);
    EXPECT_EQ(f.tensors()[0].name, "a");
    EXPECT_EQ(f.view("a").elementCount(), 1);
    EXPECT_EQ(f.view("empty").byteSize, 0u);
    EXPECT_EQ(f.view("empty").data, nullptr);
    EXPECT_EQ(f.view("empty").strides(), (std::vector<int64_t>{1000000, 1}));
    SafetensorsFile none(file(safetensorsBytes("{}", "")));
    EXPECT_TRUE(none.tensors().empty());
}

TEST_F(SafetensorsReader, RefusesFilesTooShortOrWithAnImpossibleHeaderLength) {
    expectRefused("", "0 bytes long, too short");
    expectRefused(std::string(7, '\0'), "7 bytes long, too short");
    expectRefused(safetensorsBytes("{}", "", int64_t(1) << 62), "the format allows at most 100000000");
    expectRefused(safetensorsBytes("{}", "", 100'000'001), "claims a header of 100000001 bytes");
    expectRefused(lengthField(~uint64_t(0)) + "{}", "claims a header of 18446744073709551615 bytes");
    expectRefused(safetensorsBytes("{}", "", 3), "only 2 bytes follow the length (truncated?)");
}

TEST_F(SafetensorsReader, RefusesAHeaderThatIsNotAJsonObject) {
    expectHeaderRefused("[1,2]", "", "the header is an array, not a JSON object");
    expectHeaderRefused("\"text\"", "", "the header is a string");
    expectHeaderRefused("", "", "the header is missing");
    expectHeaderRefused("PK\x03\x04", "", "the header is not JSON");
    expectHeaderRefused("{\"a\":", "", "its entry is missing", "a");
    expectHeaderRefused("{\"a\":{\"dtype\":\"F32\"", "", "the header is not valid JSON: truncated");
    expectHeaderRefused("{\"a\" {}}", "", "the header is not valid JSON: expected ':' at byte 5");
    expectHeaderRefused("{} x", "", "goes on after its JSON value");
    expectHeaderRefused(std::string("{}\0\0\0\0\0\0", 8), "", "goes on after its JSON value");
    expectHeaderRefused("{\"__metadata__\":{\"k\":\"\xC3\x28\"}}", "", "not UTF-8 text (byte 22 of the header)");
    expectHeaderRefused("{\"__metadata__\":{\"k\":\"\xED\xA0\x80\"}}", "", "not UTF-8 text"); // a surrogate
}

TEST_F(SafetensorsReader, RefusesUnknownDtypesAndBadFields) {
    expectHeaderRefused("{" + entry("w", "F33", "[1]", "[0,4]") + "}", "abcd", "unknown dtype \"F33\"", "w");
    expectHeaderRefused("{" + entry("w", "f32", "[1]", "[0,4]") + "}", "abcd", "unknown dtype \"f32\"", "w");
    expectHeaderRefused(R"({"w":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", "abcd", "\"dtype\" is a number",
                        "w");
    expectHeaderRefused(R"({"w":{"dtype":"F32","shape":[1]}})", "abcd", "lacks \"data_offsets\"", "w");
    expectHeaderRefused(R"({"w":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "abcd",
                        "\"dtype\" appears twice", "w");
    expectHeaderRefused(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"strides":[1]}})", "abcd",
                        "unknown field \"strides\"", "w");
    expectHeaderRefused(R"({"w":[1,2]})", "", "its entry is an array", "w");
    expectHeaderRefused("{" + entry("w", "F32", "[1]", "[0,4,8]") + "}", "abcd", "more than two numbers", "w");
    expectHeaderRefused("{" + entry("w", "F32", "[1]", "[4]") + "}", "abcd", "has 1 numbers", "w");
    expectHeaderRefused("{" + entry("w", "F32", "[1]", "[0,\"4\"]") + "}", "abcd", "holds a string", "w");
}

TEST_F(SafetensorsReader, RefusesBadShapes) {
    expectHeaderRefused("{" + entry("w", "F32", "[-1]", "[0,4]") + "}", "abcd", "dimension 0 of \"shape\" is negative",
                        "w");
    expectHeaderRefused("{" + entry("w", "F32", "[1.5]", "[0,4]") + "}", "abcd", "is not a whole number", "w");
    expectHeaderRefused("{" + entry("w", "F32", "[1e0]", "[0,4]") + "}", "abcd", "is not a whole number", "w");
    expectHeaderRefused("{" + entry("w", "F32", "[1,\"2\"]", "[0,4]") + "}", "abcd", "dimension 1", "w");
    expectHeaderRefused("{" + entry("w", "F32", "[99999999999999999999]", "[0,4]") + "}", "abcd", "too large", "w");
    expectHeaderRefused("{" + entry("w", "F32", "[4294967296,4294967296]", "[0,4]") + "}", "abcd",
                        "multiply past 2^63", "w");
    // 2^62 elements of 4 bytes: the byte count overflows 64 bits.
    expectHeaderRefused("{" + entry("w", "F32", "[4611686018427387904]", "[0,4]") + "}", "abcd", "passes 2^64", "w");
    expectHeaderRefused("{" + entry("w", "F32", "[2,3]", "[0,4]") + "}", "abcd",
                        "shape [2, 3] of F32 takes 24 bytes, but data_offsets [0, 4) hold 4", "w");
    expectHeaderRefused("{" + entry("w", "F4", "[3]", "[0,2]") + "}", "ab", "do not fill whole bytes", "w");
}

TEST_F(SafetensorsReader, RefusesOffsetsOutsideTheDataOrNotContiguous) {
    const std::string a = entry("a", "U8", "[4]", "[0,4]");
    expectHeaderRefused("{" + entry("a", "U8", "[4]", "[4,0]") + "}", "abcd", "end before they begin", "a");
    expectHeaderRefused("{" + entry("a", "U8", "[4]", "[0,4]") + "}", "ab", "run past the end of the file", "a");
    expectHeaderRefused("{" + a + "," + entry("b", "U8", "[4]", "[2,6]") + "}", "abcdef",
                        "overlap those of \"a\", [0, 4)", "b");
    expectHeaderRefused("{" + a + "," + entry("b", "U8", "[2]", "[6,8]") + "}", "abcdefgh",
                        "leave bytes [4, 6) of the data to no tensor", "b");
    expectHeaderRefused("{" + entry("a", "U8", "[2]", "[2,4]") + "}", "abcd", "leave bytes [0, 2)", "a");
    expectHeaderRefused("{" + a + "}", "abcdef", "the tensors end at byte 4 of the data, which holds 6 bytes");
    expectHeaderRefused("{" + a + "," + entry("b", "U8", "[4]", "[0,4]") + "}", "abcd", "overlap", "b");
}

TEST_F(SafetensorsReader, RefusesDuplicateNamesAndBadMetadata) {
    const std::string a = entry("a", "U8", "[2]", "[0,2]");
    expectHeaderRefused("{" + a + "," + entry("a", "U8", "[2]", "[2,4]") + "}", "abcd", "appears twice in the header",
                        "a");
    expectHeaderRefused(R"({"__metadata__":{"epoch":3},)" + a + "}", "ab",
                        "\"__metadata__\" entry \"epoch\" is a number; its values must be strings");
    expectHeaderRefused(R"({"__metadata__":{"k":{"x":"y"}},)" + a + "}", "ab", "is an object");
    expectHeaderRefused(R"({"__metadata__":["x"],)" + a + "}", "ab", "\"__metadata__\" is an array");
    expectHeaderRefused(R"({"__metadata__":{"k":"1","k":"2"},)" + a + "}", "ab", "has the key \"k\" twice");
    expectHeaderRefused(R"({"__metadata__":{},"__metadata__":{},)" + a + "}", "ab", "appears twice");
}

TEST_F(SafetensorsReader, RefusesDeepNestingWithoutRecursing) {
    const std::string deep(200000, '[');
    expectHeaderRefused("{\"a\":" + deep, "", "its entry is an array", "a");
    expectHeaderRefused("{\"__metadata__\":{\"k\":" + deep, "", "is an array");
    expectHeaderRefused("{\"a\":{\"shape\":" + std::string(200000, '[') + "}}", "", "dimension 0", "a");
}

TEST_F(SafetensorsReader, NamesHostileTensorNamesShortAndEscaped) {
    const std::string name = "line\nbreak" + std::string(5000, 'x');
    const std::string path = file(safetensorsBytes("{" + entry("line\\nbreak" + std::string(5000, 'x'), "F99", "[1]",
                                                               "[0,1]") + "}", "a"));
    try {
        SafetensorsFile f(path);
        FAIL() << "opened";
    } catch (const FormatError& e) {
        EXPECT_EQ(e.tensor(), name);
        const std::string what = e.what();
        EXPECT_EQ(what.find('\n'), std::string::npos);
        EXPECT_NE(what.find("line\\x0abreak"), std::string::npos) << what;
        EXPECT_LT(what.size(), 700u);
    }
}

TEST_F(SafetensorsReader, RefusesWhatIsNotARegularFileWithoutWaiting) {
    const std::string fifo = dir.path() + "/pipe.safetensors";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_THROW(SafetensorsFile{fifo}, FormatError); // no writer: opening must not block
    EXPECT_THROW(SafetensorsFile{dir.path()}, FormatError);
    try {
        SafetensorsFile f(dir.path() + "/missing.safetensors");
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("no such file"), std::string::npos) << e.what();
    }
}
