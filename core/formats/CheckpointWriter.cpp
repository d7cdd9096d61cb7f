#include "core/formats/CheckpointWriter.h"

#include "core/util/Files.h"
#include "core/util/ScaledNumber.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <stdexcept>
#include <unistd.h>

namespace parallax {

namespace {

std::string shardName(const std::string& prefix, size_t i, size_t n) {
    char suffix[48];
    std::snprintf(suffix, sizeof suffix, "-%05zu-of-%05zu", i + 1, n);
    return prefix + suffix + ".safetensors";
}

// <prefix>-<digits>-of-<digits>.safetensors
bool isShardName(const std::string& name, const std::string& prefix) {
    const std::string tail = ".safetensors";
    if (name.size() <= prefix.size() + 1 + tail.size() || name.compare(0, prefix.size() + 1, prefix + "-") != 0 ||
        name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
        return false;
    const std::string middle = name.substr(prefix.size() + 1, name.size() - prefix.size() - 1 - tail.size());
    const size_t of = middle.find("-of-");
    if (of == std::string::npos || of == 0 || of + 4 == middle.size()) return false;
    for (size_t i = 0; i < middle.size(); ++i)
        if ((i < of || i >= of + 4) && !std::isdigit(static_cast<unsigned char>(middle[i]))) return false;
    return true;
}

void syncFolder(const std::string& folder) {
    const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) throw FileError("cannot open the folder " + folder + " to sync it: " + errnoText(errno));
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) throw FileError("cannot sync the folder " + folder + ": " + errnoText(err));
}

// What an earlier checkpoint of `prefix` left that the files just written do not replace.
void removeStale(const std::string& folder, const std::string& prefix, const std::vector<std::string>& kept,
                 bool sharded) {
    for (const std::string& name : listDirectory(folder)) {
        const bool ours = isShardName(name, prefix) || name == prefix + ".safetensors" ||
                          name == prefix + ".safetensors.index.json";
        if (!ours || (sharded && name == prefix + ".safetensors.index.json")) continue;
        bool keep = false;
        for (const std::string& k : kept) keep = keep || k == joinPath(folder, name);
        if (!keep) removeAll(joinPath(folder, name));
    }
}

} // namespace

std::vector<std::vector<size_t>> planShards(const std::vector<TensorData>& tensors, uint64_t maxShardBytes) {
    std::vector<std::vector<size_t>> shards;
    std::vector<size_t> current;
    uint64_t currentBytes = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        uint64_t bytes = 0;
        std::string problem;
        if (!tensorByteSize(tensors[i].dtype, tensors[i].shape, bytes, problem))
            throw std::invalid_argument("tensor \"" + tensors[i].name + "\": " + problem);
        if (bytes > maxShardBytes) {
            shards.push_back({i}); // before the shard being filled, as huggingface_hub orders them
            continue;
        }
        if (currentBytes + bytes > maxShardBytes && !current.empty()) {
            shards.push_back(std::move(current));
            current.clear();
            currentBytes = 0;
        }
        current.push_back(i);
        currentBytes += bytes;
    }
    if (!current.empty() || shards.empty()) shards.push_back(std::move(current));
    return shards;
}

WrittenCheckpoint writeCheckpoint(const std::string& folder, const std::vector<TensorData>& tensors,
                                  const CheckpointWriteOptions& options) {
    std::vector<TensorInfo> layout;
    std::vector<size_t> order;
    safetensorsHeader(tensors, options.metadata, layout, order); // every name and shape checked before a byte is written
    const auto plan = planShards(tensors, options.maxShardBytes);
    createDirectories(folder);
    WrittenCheckpoint written;
    for (const TensorInfo& t : layout) written.totalSize += t.byteSize();
    const bool sharded = plan.size() > 1;
    nlohmann::json weightMap = nlohmann::json::object();
    std::vector<std::string> temporaries;
    try {
        for (size_t s = 0; s < plan.size(); ++s) {
            const std::string name = sharded ? shardName(options.prefix, s, plan.size()) : options.prefix + ".safetensors";
            std::vector<TensorData> shard;
            for (const size_t i : plan[s]) {
                shard.push_back(tensors[i]);
                weightMap[tensors[i].name] = name;
            }
            written.files.push_back(joinPath(folder, name));
            writeSafetensorsTemporary(written.files.back(), written.files.back() + ".tmp", shard, options.metadata);
            temporaries.push_back(written.files.back() + ".tmp");
        }
    } catch (...) {
        for (const std::string& tmp : temporaries) ::unlink(tmp.c_str());
        throw;
    }
    for (const std::string& file : written.files) renamePath(file + ".tmp", file);
    if (sharded) {
        // As transformers writes it: sorted keys, indent 2, a final newline.
        const nlohmann::json index = {{"metadata", {{"total_size", written.totalSize}}}, {"weight_map", weightMap}};
        written.index = joinPath(folder, options.prefix + ".safetensors.index.json");
        writeFileAtomic(written.index, index.dump(2, ' ', true) + "\n"); // ensure_ascii, as Python's json does
    }
    syncFolder(folder);
    removeStale(folder, options.prefix, written.files, sharded);
    return written;
}

uint64_t parseShardSize(const std::string& text) {
    static const std::vector<std::pair<std::string, double>> units = {
        {"", 1},      {"b", 1},        {"kb", 1e3},         {"mb", 1e6},            {"gb", 1e9},
        {"tb", 1e12}, {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0}};
    const auto bytes = parseScaledNumber(text, units);
    if (bytes && *bytes >= 1 && *bytes < 1.8e19) return static_cast<uint64_t>(*bytes);
    throw std::invalid_argument("the shard size \"" + text +
                                "\" is not a size; write it as transformers does, e.g. 5GB, 500MB, 2GiB, or a "
                                "number of bytes");
}

} // namespace parallax
