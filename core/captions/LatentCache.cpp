#include "core/captions/LatentCache.h"

#include "core/util/Files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

namespace parallax {

namespace {

constexpr const char* kManifest = "cache.json";
constexpr int kManifestFormat = 1;

// FNV-1a, 64 bits: a fingerprint, not a defence against a crafted collision.
struct Fnv {
    uint64_t h = 1469598103934665603ull;
    void add(const std::string& s) {
        for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
        h = (h ^ 0xff) * 1099511628211ull; // a separator, so that "ab","c" differs from "a","bc"
    }
    void add(int64_t v) { add(std::to_string(v)); }
};

void addFile(Fnv& f, const std::string& path) {
    std::error_code ec;
    f.add(std::filesystem::absolute(path, ec).string());
    f.add(static_cast<int64_t>(std::filesystem::file_size(path, ec)));
    const auto time = std::filesystem::last_write_time(path, ec);
    f.add(static_cast<int64_t>(ec ? 0 : time.time_since_epoch().count()));
}

} // namespace

LatentCacheKey latentCacheKey(const std::vector<CaptionSample>& samples, const std::string& modelFrom, int64_t maxPixels) {
    Fnv f;
    for (const CaptionSample& s : samples) {
        addFile(f, s.image);
        f.add(s.prompt);
        f.add(static_cast<int64_t>(s.edit_images.size()));
        for (const std::string& e : s.edit_images) addFile(f, e);
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(f.h));
    std::error_code ec;
    return {std::filesystem::absolute(modelFrom, ec).lexically_normal().string(), maxPixels,
            static_cast<int64_t>(samples.size()), hex};
}

std::string latentCacheFolder(const std::string& datasetPath) {
    if (isDirectory(datasetPath)) return joinPath(datasetPath, ".parallax-cache");
    return joinPath(joinPath(parentPath(datasetPath), ".parallax-cache"), baseName(datasetPath));
}

std::string cacheShardName(int64_t shard) {
    char name[40];
    std::snprintf(name, sizeof name, "shard-%05lld.safetensors", static_cast<long long>(shard));
    return name;
}

std::string cacheSampleName(int64_t index) {
    char name[24];
    std::snprintf(name, sizeof name, "%09lld", static_cast<long long>(index));
    return name;
}

int64_t cacheShardCount(int64_t samples) { return (samples + kCacheShardSamples - 1) / kCacheShardSamples; }

LatentCacheStatus latentCacheStatus(const std::string& datasetPath, const LatentCacheKey& key) {
    LatentCacheStatus s;
    s.folder = latentCacheFolder(datasetPath);
    s.samples = key.samples;
    const std::string manifest = joinPath(s.folder, kManifest);
    if (!isRegularFile(manifest)) return s;
    try {
        const nlohmann::json j = nlohmann::json::parse(readFile(manifest));
        const LatentCacheKey made{j.at("model_from").get<std::string>(), j.at("max_pixels").get<int64_t>(),
                                  j.at("samples").get<int64_t>(), j.at("fingerprint").get<std::string>()};
        s.made_for_this = j.at("format").get<int>() == kManifestFormat && made == key;
    } catch (const std::exception&) {
        return s; // unreadable: made for nothing; the cache is made again
    }
    if (!s.made_for_this) return s;
    while (s.shards_done < cacheShardCount(key.samples) && isRegularFile(joinPath(s.folder, cacheShardName(s.shards_done))))
        ++s.shards_done;
    s.samples_done = std::min(key.samples, s.shards_done * kCacheShardSamples);
    return s;
}

void writeLatentCacheManifest(const std::string& folder, const LatentCacheKey& key) {
    createDirectories(folder);
    const nlohmann::json j = {{"format", kManifestFormat}, {"model_from", key.model_from}, {"max_pixels", key.max_pixels},
                              {"samples", key.samples}, {"fingerprint", key.fingerprint},
                              {"shard_samples", kCacheShardSamples}};
    writeFileAtomic(joinPath(folder, kManifest), j.dump(2) + "\n");
}

} // namespace parallax
