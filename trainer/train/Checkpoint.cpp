#include "trainer/train/Checkpoint.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include "core/formats/SafetensorsFile.h"
#include "core/formats/SafetensorsWriter.h"
#include "core/spec/ModelDims.h"
#include "core/util/FileWriter.h"
#include "core/util/Files.h"
#include "core/util/HostName.h"
#include "trainer/train/RankExchange.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iomanip>
#include <numeric>
#include <optional>
#include <sstream>

using nlohmann::json;

namespace parallax {

namespace {

// 1: each rank's pieces in a LibTorch archive (rank_N.pt); 2: in a .safetensors file. Both are read.
constexpr int kFormatVersion = 2;

std::string stepName(int64_t step) {
    std::ostringstream s;
    s << "step_" << std::setw(8) << std::setfill('0') << step;
    return s.str();
}

std::string rankName(int rank, const char* ext) {
    std::ostringstream s;
    s << "rank_" << std::setw(5) << std::setfill('0') << rank << ext;
    return s.str();
}

// zlib's crc32 takes 32-bit lengths; LibTorch hands over a whole tensor's bytes in one call.
uLong crcOf(uLong crc, const void* data, size_t size) {
    const auto* p = static_cast<const Bytef*>(data);
    constexpr size_t kChunk = size_t{1} << 30;
    while (size > 0) {
        const size_t n = std::min(size, kChunk);
        crc = crc32(crc, p, static_cast<uInt>(n));
        p += n;
        size -= n;
    }
    return crc;
}

uint32_t fileCrc(const std::string& path, int64_t* bytes) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw CheckpointError("cannot read " + path);
    std::vector<char> buf(1 << 20);
    uLong crc = crc32(0L, Z_NULL, 0);
    *bytes = 0;
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        const auto n = in.gcount();
        if (n <= 0) break;
        crc = crcOf(crc, buf.data(), static_cast<size_t>(n));
        *bytes += n;
    }
    return static_cast<uint32_t>(crc);
}

// The model's kind and dimensions as the manifest keeps them: one key per dimension, named as the
// spec's field without "model.". kv_heads, vision_ffn and text_dim came in later: a manifest
// without them reads them as unknown (-1), and they are not compared then.
json dimsToJson(const ModelDims& d) {
    return json{{"kind", choiceName(d.kind)},           {"layers", d.layers},
                {"dim", d.dim},             {"heads", d.heads},
                {"kv_heads", d.kv_heads},   {"ffn", d.ffn},
                {"vocab", d.vocab},         {"seq_len", d.seq_len},
                {"image_size", d.image_size}, {"channels", d.channels},
                {"patch", d.patch},         {"vision_layers", d.vision_layers},
                {"vision_dim", d.vision_dim}, {"vision_heads", d.vision_heads},
                {"vision_ffn", d.vision_ffn}, {"text_dim", d.text_dim}};
}

ModelDims dimsFromJson(const json& j) {
    ModelDims d;
    const std::string kind = j.at("kind").get<std::string>();
    const std::optional<ModelKind> parsed = parseChoice<ModelKind>(kind);
    if (!parsed) throw CheckpointError("the manifest names model kind \"" + kind + "\", which this build does not know");
    d.kind = *parsed;
    d.layers = j.at("layers");
    d.dim = j.at("dim");
    d.heads = j.at("heads");
    d.ffn = j.at("ffn");
    d.vocab = j.at("vocab");
    d.seq_len = j.at("seq_len");
    d.image_size = j.at("image_size");
    d.channels = j.at("channels");
    d.patch = j.at("patch");
    d.vision_layers = j.at("vision_layers");
    d.vision_dim = j.at("vision_dim");
    d.vision_heads = j.at("vision_heads");
    d.kv_heads = j.value("kv_heads", int64_t{-1});
    d.vision_ffn = j.value("vision_ffn", int64_t{-1});
    d.text_dim = j.value("text_dim", int64_t{-1});
    return d;
}

json pieceToJson(const CheckpointPiece& p, const std::string& file, const std::string& key) {
    return json{{"name", p.name},           {"role", p.role},
                {"shape", p.shape},         {"slab_dim", p.slab_dim},
                {"slab_start", p.slab_start}, {"slab_length", p.slab_length},
                {"flat_offset", p.flat_offset}, {"flat_length", p.flat_length},
                {"file", file},             {"key", key}};
}

// A whole file written and synced, or CheckpointError saying what failed where. Inside the partial
// folder no temporary file is needed: the folder's rename is what makes a checkpoint appear.
void writeWhole(const std::string& path, const std::string& contents, const std::string& where) {
    FileWriter out(path);
    out.write(contents.data(), contents.size());
    if (!out.finish()) throw CheckpointError(out.describe(where));
}

// Puts the complete folder `from` at `to`. A folder already at `to` (the same step written again)
// is moved aside first and removed only once the new one is in place, so that a failure never
// leaves less than there was.
void replaceFolder(const std::string& from, const std::string& to) {
    if (!pathExists(to)) {
        renamePath(from, to);
        return;
    }
    const std::string aside = to + ".replaced";
    removeAll(aside);
    renamePath(to, aside);
    try {
        renamePath(from, to);
    } catch (const FileError&) {
        renamePath(aside, to);
        throw;
    }
    try {
        removeAll(aside);
    } catch (const FileError&) {
        // The new checkpoint is complete and in place; what is left is an older copy of the same
        // step under a name listCheckpoints never takes.
    }
}

// The name of a piece in its rank's file: the parameter's own name under its role when the piece
// is the whole tensor (then the file reads as a state dict), else with the slab and range it holds.
bool isWholeTensor(const CheckpointPiece& p) {
    const int64_t numel = std::accumulate(p.shape.begin(), p.shape.end(), int64_t{1}, std::multiplies<int64_t>());
    return p.slab_dim < 0 && p.flat_offset == 0 && p.flat_length == numel;
}

std::string pieceKey(const CheckpointPiece& p) {
    std::string key = p.role + "/" + p.name;
    if (isWholeTensor(p)) return key;
    if (p.slab_dim >= 0)
        key += "/slab" + std::to_string(p.slab_dim) + ":" + std::to_string(p.slab_start) + "+" +
               std::to_string(p.slab_length);
    return key + "/" + std::to_string(p.flat_offset) + "+" + std::to_string(p.flat_length);
}

struct RankFile {
    int64_t bytes = 0;
    uint32_t crc = 0;
    std::vector<std::string> keys; // per piece
};

// One rank's pieces as a .safetensors file (fp32, little-endian), which safetensors and the Hugging
// Face tools read. Streamed to the file as LibTorch hands the bytes over and checksummed on the way.
RankFile writeRankFile(const std::string& path, const CheckpointMeta& meta, const std::vector<CheckpointPiece>& pieces,
                       const std::string& where) {
    RankFile out;
    std::vector<torch::Tensor> host;
    std::vector<TensorData> tensors;
    for (const CheckpointPiece& p : pieces) {
        host.push_back(p.data.detach().to(torch::kCPU, torch::kFloat).contiguous());
        out.keys.push_back(pieceKey(p));
        tensors.push_back({out.keys.back(), Dtype::F32, isWholeTensor(p) ? p.shape : std::vector<int64_t>{p.flat_length},
                           host.back().numel() > 0 ? host.back().data_ptr() : nullptr});
    }
    std::vector<TensorInfo> layout;
    std::vector<size_t> order;
    const std::string header = safetensorsHeader(
        tensors, {{"format", "pt"}, {"parallax", "checkpoint"}, {"step", std::to_string(meta.step)}}, layout, order);
    FileWriter file(path);
    uLong crc = crc32(0L, Z_NULL, 0);
    auto write = [&](const void* data, size_t size) {
        crc = crcOf(crc, data, size);
        file.write(data, size);
    };
    unsigned char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(static_cast<uint64_t>(header.size()) >> (8 * i));
    write(length, sizeof length);
    write(header.data(), header.size());
    for (size_t k = 0; k < layout.size(); ++k)
        if (layout[k].byteSize() > 0) write(tensors[order[k]].data, static_cast<size_t>(layout[k].byteSize()));
    if (!file.finish()) throw CheckpointError(file.describe(where));
    out.bytes = file.bytesWritten();
    out.crc = static_cast<uint32_t>(crc);
    return out;
}

// The manifest of the `worldSize` ranks' files in `partial`, from the part each rank wrote.
void writeManifest(const std::string& partial, const CheckpointMeta& meta, int worldSize, const std::string& where) {
    json files = json::array(), entries = json::array();
    for (int r = 0; r < worldSize; ++r) {
        json part = json::parse(readFile(joinPath(partial, rankName(r, ".json"))));
        files.push_back({{"name", part["file"]}, {"bytes", part["bytes"]}, {"crc32", part["crc32"]}});
        for (auto& e : part["pieces"]) entries.push_back(e);
    }
    json manifest{{"format", kFormatVersion},
                  {"step", meta.step},
                  {"optimizer_steps", meta.optimizer_steps},
                  {"layout", meta.layout},
                  {"seed", meta.seed},
                  {"world", worldSize},
                  {"model", dimsToJson(meta.dims)},
                  {"files", files},
                  {"pieces", entries}};
    writeWhole(joinPath(partial, "manifest.json"), manifest.dump(1), where);
}

} // namespace

SavedCheckpoint saveCheckpoint(const std::string& checkpointsDir, const CheckpointMeta& meta,
                               const std::vector<CheckpointPiece>& pieces, Communicator& world) {
    const std::string finalDir = joinPath(checkpointsDir, stepName(meta.step));
    const std::string partial = finalDir + ".partial";
    // Where each message says it happened: "checkpoint step 20 on node1, rank 1".
    const std::string where = "checkpoint step " + std::to_string(meta.step) + " on " + hostName() + ", rank " +
                              std::to_string(world.rank());
    // Every stage ends with every rank agreeing on the first failure; then the partial folder goes
    // (freeing what a full disk took) and every rank throws the same message.
    auto agree = [&](const std::string& failure) {
        const std::string first = firstFailure(failure, world);
        if (first.empty()) return;
        std::string cleanup;
        if (world.rank() == 0) {
            try {
                removeAll(partial);
            } catch (const FileError& e) {
                cleanup = e.what();
            }
        }
        // No rank returns before the folder is gone: a caller may look at it next.
        const std::string removal = firstFailure(cleanup, world);
        throw CheckpointError(first + (removal.empty() ? "; the partial folder " + partial + " was removed"
                                                       : "; the partial folder could not be removed: " + removal));
    };

    std::string failure;
    if (world.rank() == 0) {
        try {
            createDirectories(checkpointsDir);
            removeAll(partial);
            createDirectories(partial);
        } catch (const FileError& e) {
            failure = "writing " + where + " failed: " + e.what();
        }
    }
    agree(failure);

    const std::string file = rankName(world.rank(), ".safetensors");
    SavedCheckpoint saved;
    saved.dir = finalDir;
    try {
        const RankFile written = writeRankFile(joinPath(partial, file), meta, pieces, where);
        saved.bytes = written.bytes;
        json index = json::array();
        for (size_t i = 0; i < pieces.size(); ++i) index.push_back(pieceToJson(pieces[i], file, written.keys[i]));
        json part{{"file", file}, {"bytes", saved.bytes}, {"crc32", written.crc}, {"pieces", index}};
        writeWhole(joinPath(partial, rankName(world.rank(), ".json")), part.dump(), where);
    } catch (const CheckpointError& e) {
        failure = e.what();
    } catch (const std::exception& e) {
        failure = "writing " + where + " failed: " + e.what();
    }
    agree(failure);

    if (world.rank() == 0) {
        try {
            writeManifest(partial, meta, world.size(), where);
            replaceFolder(partial, finalDir);
        } catch (const CheckpointError& e) {
            failure = e.what();
        } catch (const std::exception& e) {
            failure = "writing the manifest of " + where + " failed: " + e.what();
        }
    }
    agree(failure);
    return saved;
}

int64_t checkpointStep(const std::string& stepDir) {
    const std::string name = baseName(stepDir);
    if (name.rfind("step_", 0) != 0) return -1;
    try {
        size_t used = 0;
        const int64_t step = std::stoll(name.substr(5), &used);
        return used == name.size() - 5 ? step : -1;
    } catch (const std::exception&) {
        return -1;
    }
}

std::vector<std::string> listCheckpoints(const std::string& checkpointsDir) {
    std::vector<std::string> out;
    if (!isDirectory(checkpointsDir)) return out;
    for (const std::string& name : listDirectory(checkpointsDir)) {
        const std::string path = joinPath(checkpointsDir, name);
        if (name.rfind("step_", 0) == 0 && name.find('.') == std::string::npos && isDirectory(path) &&
            pathExists(joinPath(path, "manifest.json")))
            out.push_back(path);
    }
    std::sort(out.rbegin(), out.rend());
    return out;
}

CheckpointReader::CheckpointReader(const std::string& path) {
    if (!pathExists(path)) throw CheckpointError("checkpoint " + path + " does not exist");
    if (pathExists(joinPath(path, "manifest.json"))) {
        open(path);
        return;
    }
    const auto candidates = listCheckpoints(path);
    if (candidates.empty())
        throw CheckpointError("no complete checkpoint under " + path +
                              " (a checkpoint is complete once its manifest.json is written)");
    std::vector<std::string> damaged;
    for (const std::string& dir : candidates) {
        try {
            open(dir);
            return;
        } catch (const CheckpointError& e) {
            damaged.push_back(e.what());
            m_warnings.push_back(std::string(e.what()) + "; trying an earlier checkpoint");
            m_entries.clear();
        }
    }
    std::string all;
    for (const std::string& d : damaged) all += "; " + d;
    throw CheckpointError("every checkpoint under " + path + " is damaged (" + std::to_string(damaged.size()) +
                          " of them)" + all);
}

void CheckpointReader::open(const std::string& stepDir) {
    const std::string& dir = stepDir;
    json manifest;
    try {
        manifest = json::parse(readFile(joinPath(dir, "manifest.json")));
    } catch (const std::exception& e) {
        throw CheckpointError("checkpoint " + stepDir + " is damaged: manifest.json does not parse (" + e.what() + ")");
    }
    try {
        if (manifest.at("format").get<int>() > kFormatVersion)
            throw CheckpointError("checkpoint " + stepDir + " was written by a newer Parallax (format " +
                                  std::to_string(manifest.at("format").get<int>()) + "); upgrade to resume it");
        for (const auto& f : manifest.at("files")) {
            const std::string name = f.at("name");
            int64_t bytes = 0;
            uint32_t crc = 0;
            if (!pathExists(joinPath(dir, name)))
                throw CheckpointError("checkpoint " + stepDir + " is damaged: " + name + " is missing");
            crc = fileCrc(joinPath(dir, name), &bytes);
            if (bytes != f.at("bytes").get<int64_t>())
                throw CheckpointError("checkpoint " + stepDir + " is damaged: " + name + " has " +
                                      std::to_string(bytes) + " bytes, the manifest says " +
                                      std::to_string(f.at("bytes").get<int64_t>()));
            if (crc != f.at("crc32").get<uint32_t>())
                throw CheckpointError("checkpoint " + stepDir + " is damaged: " + name +
                                      " does not match its CRC-32 in the manifest");
        }
        m_meta.step = manifest.at("step");
        m_meta.optimizer_steps = manifest.at("optimizer_steps");
        m_meta.layout = manifest.at("layout");
        m_meta.seed = manifest.at("seed");
        m_meta.dims = dimsFromJson(manifest.at("model"));
        for (const auto& e : manifest.at("pieces")) {
            Entry entry;
            entry.piece.name = e.at("name");
            entry.piece.role = e.at("role");
            entry.piece.shape = e.at("shape").get<std::vector<int64_t>>();
            entry.piece.slab_dim = e.at("slab_dim");
            entry.piece.slab_start = e.at("slab_start");
            entry.piece.slab_length = e.at("slab_length");
            entry.piece.flat_offset = e.at("flat_offset");
            entry.piece.flat_length = e.at("flat_length");
            entry.file = e.at("file");
            entry.key = e.at("key");
            m_entries.emplace(std::make_pair(entry.piece.name, entry.piece.role), std::move(entry));
        }
    } catch (const json::exception& e) {
        throw CheckpointError("checkpoint " + stepDir + " is damaged: manifest.json lacks a field (" + e.what() + ")");
    }
    m_dir = stepDir;
}

bool CheckpointReader::has(const std::string& name, const std::string& role) const {
    return m_entries.count({name, role}) > 0;
}

std::vector<int64_t> CheckpointReader::shape(const std::string& name, const std::string& role) const {
    const auto it = m_entries.find({name, role});
    if (it == m_entries.end()) throw CheckpointError("checkpoint " + m_dir + " has no " + role + " for " + name);
    return it->second.piece.shape;
}

std::vector<std::string> CheckpointReader::names(const std::string& role) const {
    std::vector<std::string> out;
    for (const auto& [key, entry] : m_entries)
        if (key.second == role && (out.empty() || out.back() != key.first)) out.push_back(key.first);
    return out;
}

torch::Tensor CheckpointReader::full(const std::string& name, const std::string& role) const {
    auto range = m_entries.equal_range({name, role});
    if (range.first == range.second)
        throw CheckpointError("checkpoint " + m_dir + " has no " + role + " for " + name +
                              "; it was written for another model");
    const auto& shape = range.first->second.piece.shape;
    torch::Tensor full = torch::empty(shape, torch::kFloat);
    int64_t covered = 0;
    // Pieces of one slab are assembled in a contiguous buffer, then copied into the slab's view.
    std::map<std::tuple<int, int64_t, int64_t>, torch::Tensor> slabs;
    for (auto it = range.first; it != range.second; ++it) {
        const Entry& e = it->second;
        const CheckpointPiece& p = e.piece;
        const torch::Tensor data = pieceData(e);
        if (data.numel() != p.flat_length)
            throw CheckpointError("checkpoint " + m_dir + ": piece " + e.key + " of " + name + " holds " +
                                  std::to_string(data.numel()) + " values, the manifest says " +
                                  std::to_string(p.flat_length));
        const auto slabKey = std::make_tuple(p.slab_dim, p.slab_start, p.slab_length);
        auto& slab = slabs[slabKey];
        if (!slab.defined()) {
            auto slabShape = shape;
            if (p.slab_dim >= 0) slabShape[static_cast<size_t>(p.slab_dim)] = p.slab_length;
            slab = torch::empty(slabShape, torch::kFloat);
        }
        slab.view({-1}).narrow(0, p.flat_offset, p.flat_length).copy_(data.view({-1}).to(torch::kFloat));
        covered += p.flat_length;
    }
    if (covered != full.numel())
        throw CheckpointError("checkpoint " + m_dir + ": the pieces of " + name + " (" + role + ") cover " +
                              std::to_string(covered) + " of " + std::to_string(full.numel()) + " values");
    for (auto& [key, slab] : slabs) {
        const int dim = std::get<0>(key);
        if (dim < 0)
            full.copy_(slab);
        else
            full.narrow(dim, std::get<1>(key), std::get<2>(key)).copy_(slab);
    }
    return full;
}

torch::Tensor CheckpointReader::pieceData(const Entry& e) const {
    const std::string path = joinPath(m_dir, e.file);
    if (e.file.size() < 3 || e.file.compare(e.file.size() - 3, 3, ".pt") != 0) {
        auto it = m_files.find(e.file);
        if (it == m_files.end()) {
            try {
                it = m_files.emplace(e.file, std::make_unique<SafetensorsFile>(path)).first;
            } catch (const std::exception& ex) {
                throw CheckpointError("checkpoint " + m_dir + " is damaged: " + ex.what());
            }
        }
        const TensorInfo* info = it->second->find(e.key);
        if (!info || info->dtype != Dtype::F32)
            throw CheckpointError("checkpoint " + m_dir + ": " + e.file + " has no fp32 tensor " + e.key +
                                  ", which the manifest names");
        const TensorView view = it->second->view(*info);
        // The mapping is read as it is; the piece is copied into its slab by the caller.
        const torch::Tensor mapped = torch::from_blob(const_cast<std::byte*>(view.data), {view.elementCount()},
                                                      torch::TensorOptions().dtype(torch::kFloat));
        return view.aligned() ? mapped : mapped.clone();
    }
    // Format 1: a LibTorch archive per rank, loaded once.
    auto archiveIt = m_archives.find(e.file);
    if (archiveIt == m_archives.end()) {
        archiveIt = m_archives.emplace(e.file, torch::serialize::InputArchive()).first;
        archiveIt->second.load_from(path);
    }
    torch::Tensor data;
    archiveIt->second.read(e.key, data);
    return data;
}

void CheckpointReader::requireCompatible(const ModelDims& d) const {
    const ModelDims& c = m_meta.dims;
    if (c.kind != d.kind)
        throw CheckpointError("checkpoint " + m_dir + " holds a " + choiceName(c.kind) + " model, the spec asks for " +
                              choiceName(d.kind));
    // The dimensions the kind reads (modelDimensionFields), each as saved and as asked; one the
    // manifest does not record (-1) is not compared.
    const auto saved = modelDimensionFields(c);
    const auto wanted = modelDimensionFields(d);
    for (size_t i = 0; i < saved.size() && i < wanted.size(); ++i) {
        const auto& [field, value] = saved[i];
        if (value < 0 || value == wanted[i].second) continue;
        throw CheckpointError("checkpoint " + m_dir + " was written for " + field + " = " + std::to_string(value) +
                              ", the spec asks for " + std::to_string(wanted[i].second) +
                              "; resume with the same model or start a new run");
    }
}

} // namespace parallax
