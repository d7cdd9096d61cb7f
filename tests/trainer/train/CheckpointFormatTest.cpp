// A run's checkpoint is a folder of .safetensors files (one per rank) and a JSON manifest: a reader
// that is not the project's opens it, and checkpoints of the earlier format (LibTorch archives)
// still resume.

#include "tests/trainer/support/SpecText.h"
#include "tests/trainer/support/WorkerRun.h"

#include <gtest/gtest.h>

#include "core/util/Files.h"
#include "trainer/train/Checkpoint.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <cstring>
#include <fstream>

using namespace parallax;
using namespace parallax::testing;
using nlohmann::json;

namespace {

std::vector<double> tail(const std::vector<double>& v, size_t from) {
    return std::vector<double>(v.begin() + static_cast<long>(from), v.end());
}

std::vector<float> floatsOfHex(const std::string& hex) {
    std::vector<unsigned char> bytes(hex.size() / 2);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
    std::vector<float> out(bytes.size() / 4);
    std::memcpy(out.data(), bytes.data(), out.size() * 4);
    return out;
}

// A dp=2 run with ZeRO-1 (so that both whole tensors and ranges of them are written), stopped at 4.
struct Saved {
    TinySpec spec;
    TempDir tmp;
    WorkerRun straight, first;
    Saved() {
        spec.kind = "gpt";
        spec.steps = 8;
        spec.dp = 2;
        spec.zero = 1;
        straight = runWorker(spec.toToml(), 2, tmp.path() + "/straight");
        first = runWorker(spec.toToml(), 2, tmp.path() + "/a", {"--stop-after", "4"});
    }
};

TEST(CheckpointFormat, EachRanksFileIsSafetensorsThatAnIndependentReaderOpens) {
    Saved s;
    ASSERT_EQ(s.first.exitCode, 0) << s.first.output;
    const std::string dir = s.first.lastCheckpoint();
    ASSERT_FALSE(dir.empty());
    const json manifest = json::parse(readFile(joinPath(dir, "manifest.json")));
    EXPECT_EQ(manifest.at("format"), 2);
    const CheckpointReader reader(dir);
    int wholeParameters = 0;
    for (int rank = 0; rank < 2; ++rank) {
        const std::string file = joinPath(dir, rank == 0 ? "rank_00000.safetensors" : "rank_00001.safetensors");
        const ProcessResult dump =
            runProcess({"python3", sourceDir() + "/tests/core/formats/safetensors_ref.py", "dump", file});
        ASSERT_EQ(dump.exitCode, 0) << dump.output;
        const json seen = json::parse(dump.output);
        std::map<std::string, json> byName;
        for (const json& t : seen.at("tensors")) byName[t.at("name")] = t;
        // Every piece the manifest puts in this file is there, in fp32.
        size_t pieces = 0;
        for (const json& p : manifest.at("pieces")) {
            if (p.at("file") != baseName(file)) continue;
            ++pieces;
            const auto it = byName.find(p.at("key"));
            ASSERT_NE(it, byName.end()) << p.at("key");
            EXPECT_EQ(it->second.at("dtype"), "F32");
        }
        EXPECT_EQ(pieces, byName.size());
        // A whole parameter reads as a state dict's tensor would: its name, its shape, its values.
        for (const auto& [name, tensor] : byName) {
            const std::string parameter = name.substr(6);
            if (name.rfind("param/", 0) != 0 || parameter.find('/') != std::string::npos) continue;
            const torch::Tensor expected = reader.full(parameter, "param").contiguous();
            EXPECT_EQ(tensor.at("shape").get<std::vector<int64_t>>(), expected.sizes().vec()) << name;
            const std::vector<float> values = floatsOfHex(tensor.at("hex"));
            ASSERT_EQ(static_cast<int64_t>(values.size()), expected.numel()) << name;
            EXPECT_EQ(std::memcmp(values.data(), expected.data_ptr<float>(), values.size() * 4), 0) << name;
            ++wholeParameters;
        }
    }
    EXPECT_GT(wholeParameters, 10) << "no parameter was written whole";
}

// The same checkpoint rewritten as the earlier format had it (a LibTorch archive per rank, keys
// t0, t1, ..., format 1) resumes to the same losses.
TEST(CheckpointFormat, TheEarlierArchiveFormatStillResumes) {
    Saved s;
    ASSERT_EQ(s.first.exitCode, 0) << s.first.output;
    const std::string dir = s.first.lastCheckpoint();
    json manifest = json::parse(readFile(joinPath(dir, "manifest.json")));
    const CheckpointReader reader(dir);
    std::map<std::string, torch::serialize::OutputArchive> archives;
    std::map<std::string, int> counts;
    for (json& p : manifest.at("pieces")) {
        const std::string rankFile = p.at("file");
        const std::string old = rankFile.substr(0, rankFile.find('.')) + ".pt";
        // The piece's values, from the full tensor the new reader rebuilds.
        torch::Tensor full = reader.full(p.at("name"), p.at("role"));
        const int slabDim = p.at("slab_dim");
        if (slabDim >= 0) full = full.narrow(slabDim, p.at("slab_start"), p.at("slab_length"));
        const torch::Tensor piece = full.contiguous().view({-1}).narrow(0, p.at("flat_offset"), p.at("flat_length")).clone();
        const std::string key = "t" + std::to_string(counts[old]++);
        archives[old].write(key, piece);
        p["file"] = old;
        p["key"] = key;
    }
    json files = json::array();
    for (auto& [name, archive] : archives) {
        archive.save_to(joinPath(dir, name));
        const std::string bytes = readFile(joinPath(dir, name));
        const uint32_t crc = static_cast<uint32_t>(
            crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
        files.push_back({{"name", name}, {"bytes", bytes.size()}, {"crc32", crc}});
    }
    for (const char* gone : {"rank_00000.safetensors", "rank_00001.safetensors"}) removeAll(joinPath(dir, gone));
    manifest["format"] = 1;
    manifest["files"] = files;
    std::ofstream(joinPath(dir, "manifest.json")) << manifest.dump(1);

    TinySpec other = s.spec;
    other.zero = 0;
    const WorkerRun second = runWorker(other.toToml(), 2, s.tmp.path() + "/b", {"--resume", dir});
    ASSERT_EQ(second.exitCode, 0) << second.output;
    ASSERT_EQ(second.losses().size(), 4u);
    EXPECT_LT(maxRelativeDifference(second.losses(), tail(s.straight.losses(), 4)), 1e-5);
}

} // namespace
