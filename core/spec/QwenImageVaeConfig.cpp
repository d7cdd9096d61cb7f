#include "core/spec/QwenImageVaeConfig.h"

#include "core/spec/ConfigJson.h"
#include "core/util/Files.h"

#include <cmath>
#include <stdexcept>

namespace parallax {

namespace {

using configjson::ConfigReader;
using configjson::Json;
using configjson::shown;

// Far above the published VAE (384 channels at most, 2 blocks, 4 stages), low enough that the shapes
// a config asks for stay countable: the model is built from the config before its weights are checked.
constexpr int64_t kMostChannels = 65536;
constexpr int64_t kMostBlocks = 64;
constexpr size_t kMostStages = 8;

int64_t bounded(const ConfigReader& config, const std::string& key, int64_t fallback, int64_t most) {
    const Json* v = config.in(config.top(), key);
    const int64_t n = v ? config.count(*v, key) : fallback;
    if (n > most)
        throw std::invalid_argument(config.where(key, "") + " = " + std::to_string(n) + " is more than any VAE has (at most " +
                                    std::to_string(most) + ")");
    return n;
}

std::vector<int64_t> readStages(const ConfigReader& config) {
    const Json* v = config.in(config.top(), "dim_mult");
    if (!v) return QwenImageVaeConfig().dim_mult;
    if (!v->is_array() || v->size() < 2 || v->size() > kMostStages)
        throw std::invalid_argument(config.where("dim_mult", "") + " is " + shown(*v) + "; it lists each stage's channels " +
                                    "in base_dim, 2 to " + std::to_string(kMostStages) + " positive whole numbers");
    std::vector<int64_t> stages;
    for (const Json& m : *v) stages.push_back(config.count(m, "dim_mult"));
    return stages;
}

std::vector<bool> readTemporal(const ConfigReader& config, size_t downsamplings) {
    const Json* v = config.in(config.top(), "temperal_downsample");
    std::vector<bool> flags;
    if (!v) {
        flags = QwenImageVaeConfig().temperal_downsample;
    } else {
        if (!v->is_array())
            throw std::invalid_argument(config.where("temperal_downsample", "") + " is " + shown(*v) + ", not a list of true/false");
        for (const Json& f : *v) {
            if (!f.is_boolean())
                throw std::invalid_argument(config.where("temperal_downsample", "") + " holds " + shown(f) + ", not true or false");
            flags.push_back(f.get<bool>());
        }
    }
    if (flags.size() != downsamplings)
        throw std::invalid_argument(config.where("temperal_downsample", "") + " has " + std::to_string(flags.size()) +
                                    " entries; the " + std::to_string(downsamplings + 1) + " stages of dim_mult downsample " +
                                    std::to_string(downsamplings) + " times, one entry each");
    return flags;
}

std::vector<double> readStatistic(const ConfigReader& config, const std::string& key, int64_t channels) {
    const Json* v = config.in(config.top(), key);
    const std::string expected = std::to_string(channels) + " finite numbers, one per latent channel (z_dim)";
    if (!v)
        throw std::invalid_argument(config.where(key, "") + " is missing; the published config lists " + expected +
                                    ", which the latents are normalized by");
    if (!v->is_array() || int64_t(v->size()) != channels)
        throw std::invalid_argument(config.where(key, "") + " is " + shown(*v) + "; it must list " + expected);
    std::vector<double> values;
    for (const Json& x : *v) {
        if (!x.is_number() || !std::isfinite(x.get<double>()))
            throw std::invalid_argument(config.where(key, "") + " holds " + shown(x) + "; it must list " + expected);
        values.push_back(x.get<double>());
    }
    return values;
}

void checkClassAndAttention(const ConfigReader& config) {
    const Json* name = config.in(config.top(), "_class_name");
    if (name && (!name->is_string() || name->get<std::string>() != kQwenImageVaeClass))
        throw std::invalid_argument(config.where("_class_name", "") + " is " + shown(*name) + "; Parallax reads " +
                                    kQwenImageVaeClass + " (Qwen-Image's VAE) here");
    const Json* attention = config.in(config.top(), "attn_scales");
    if (attention && !(attention->is_array() && attention->empty()))
        throw std::invalid_argument(config.where("attn_scales", "") + " is " + shown(*attention) +
                                    "; it puts attention blocks among the encoder's stages, which the published VAE has "
                                    "none of and Parallax does not build: it must be []");
}

} // namespace

std::string qwenImageVaeFolder(const std::string& folder) {
    if (isRegularFile(joinPath(folder, "config.json"))) return folder;
    if (isRegularFile(joinPath(folder, "model_index.json"))) {
        const std::string vae = joinPath(folder, "vae");
        if (!isRegularFile(joinPath(vae, "config.json")))
            throw std::invalid_argument(folder + " is a diffusers pipeline folder (model_index.json) without vae/config.json; "
                                                 "the VAE comes from its vae/ folder");
        return vae;
    }
    throw std::invalid_argument(folder + " holds neither config.json (a VAE folder) nor model_index.json (a pipeline "
                                         "folder with vae/): no VAE to read");
}

QwenImageVaeConfig readQwenImageVaeConfig(const std::string& folder) {
    const std::string vaeFolder = qwenImageVaeFolder(folder);
    QwenImageVaeConfig c;
    c.path = joinPath(vaeFolder, "config.json");
    const Json json = configjson::parseConfig(vaeFolder, c.path);
    const ConfigReader config(json, c.path);
    checkClassAndAttention(config);
    c.base_dim = bounded(config, "base_dim", c.base_dim, kMostChannels);
    c.z_dim = bounded(config, "z_dim", c.z_dim, kMostChannels);
    c.num_res_blocks = bounded(config, "num_res_blocks", c.num_res_blocks, kMostBlocks);
    c.input_channels = bounded(config, "input_channels", c.input_channels, kMostChannels);
    c.dim_mult = readStages(config);
    for (size_t i = 0; i < c.dim_mult.size(); ++i)
        if (c.dim_mult[i] > kMostChannels / c.base_dim)
            throw std::invalid_argument(config.where("dim_mult", "") + ": stage " + std::to_string(i) + " would have " +
                                        std::to_string(c.dim_mult[i]) + " x base_dim " + std::to_string(c.base_dim) +
                                        " channels, more than any VAE has (at most " + std::to_string(kMostChannels) + ")");
    c.temperal_downsample = readTemporal(config, c.dim_mult.size() - 1);
    c.latents_mean = readStatistic(config, "latents_mean", c.z_dim);
    c.latents_std = readStatistic(config, "latents_std", c.z_dim);
    for (double s : c.latents_std)
        if (s <= 0)
            throw std::invalid_argument(config.where("latents_std", "") + " holds " + std::to_string(s) +
                                        "; standard deviations must be positive (latents are divided by them)");
    return c;
}

std::string qwenImageVaeConfigText(const QwenImageVaeConfig& c) {
    configjson::Json json = configjson::Json::object();
    json["_class_name"] = kQwenImageVaeClass;
    json["attn_scales"] = configjson::Json::array();
    json["base_dim"] = c.base_dim;
    json["dim_mult"] = c.dim_mult;
    json["dropout"] = 0.0;
    json["input_channels"] = c.input_channels;
    json["latents_mean"] = c.latents_mean;
    json["latents_std"] = c.latents_std;
    json["num_res_blocks"] = c.num_res_blocks;
    json["temperal_downsample"] = c.temperal_downsample;
    json["z_dim"] = c.z_dim;
    return json.dump(2) + "\n";
}

} // namespace parallax
