#pragma once

#include "core/formats/SafetensorsFile.h"
#include "core/spec/ModelDims.h"
#include "trainer/comm/Communicator.h"

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace parallax {

class CheckpointError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A piece of one tensor of the training state, in a form that does not depend on the layout that
// wrote it: the full tensor's shape, an optional slab along one dimension (tensor-parallel shards),
// and a range of that slab's flattened elements (ZeRO shards). Any layout can rebuild the full
// tensors and take its own pieces, so a run saved with dp=4 resumes with dp=2 x tp=2.
struct CheckpointPiece {
    std::string name;               // parameter name, e.g. "units.3.q.weight"
    std::string role;               // param | exp_avg | exp_avg_sq
    std::vector<int64_t> shape;     // of the full tensor
    int slab_dim = -1;              // -1: the piece is a range of the whole tensor
    int64_t slab_start = 0;
    int64_t slab_length = 0;
    int64_t flat_offset = 0;        // range of the slab's (or tensor's) flattened elements
    int64_t flat_length = 0;
    torch::Tensor data;             // (flat_length) fp32, CPU or device
};

// Training state other than tensors.
struct CheckpointMeta {
    int64_t step = 0;               // the next step to run
    int64_t optimizer_steps = 0;
    std::string layout;             // "dp2.tp1.pp1.z0.1f1b" (informational)
    uint64_t seed = 0;
    ModelDims dims;
};

// Writes step_<N>.partial/ (one .safetensors file per rank plus its index), then rank 0 writes manifest.json with
// each file's size and CRC-32 and renames the folder to step_<N>: a checkpoint without a manifest is
// never picked up. Collective over `world`. Returns the folder and the bytes this rank wrote.
// Every write is checked. When any rank fails, every rank throws CheckpointError with the message of
// the failed rank of least number, saying what, where and how far, e.g. "no space left on device
// writing checkpoint step 20 on node1, rank 1 (<file>): 1048576 of 3145728 bytes written"; the
// partial folder is removed before any rank returns, and complete checkpoints stay as they were (a
// step_<N> written again is replaced only once the new one is complete).
struct SavedCheckpoint {
    std::string dir;
    int64_t bytes = 0;
};
SavedCheckpoint saveCheckpoint(const std::string& checkpointsDir, const CheckpointMeta& meta,
                               const std::vector<CheckpointPiece>& pieces, Communicator& world);

// A complete checkpoint folder, verified (manifest, sizes, checksums, model dims) when opened.
class CheckpointReader {
public:
    // `path`: a step_<N> folder, or a checkpoints folder (the latest step that verifies is taken; a
    // damaged newer one is skipped and reported in warnings()).
    explicit CheckpointReader(const std::string& path);

    const CheckpointMeta& meta() const { return m_meta; }
    const std::string& dir() const { return m_dir; }
    const std::vector<std::string>& warnings() const { return m_warnings; }
    bool has(const std::string& name, const std::string& role) const;
    // The full tensor's shape; CheckpointError when the checkpoint does not hold it.
    std::vector<int64_t> shape(const std::string& name, const std::string& role) const;
    // The full tensor (CPU fp32) rebuilt from every piece; CheckpointError when pieces are missing.
    torch::Tensor full(const std::string& name, const std::string& role) const;
    std::vector<std::string> names(const std::string& role) const;
    // Throws CheckpointError naming the first model field that differs from `dims`.
    void requireCompatible(const ModelDims& dims) const;

private:
    void open(const std::string& stepDir);
    struct Entry {
        CheckpointPiece piece; // without data
        std::string file;
        std::string key;
    };
    std::string m_dir;
    CheckpointMeta m_meta;
    std::vector<std::string> m_warnings;
    std::multimap<std::pair<std::string, std::string>, Entry> m_entries;
    torch::Tensor pieceData(const Entry& e) const; // (flat_length) fp32
    mutable std::map<std::string, torch::serialize::InputArchive> m_archives; // format 1: loaded once per file
    mutable std::map<std::string, std::unique_ptr<SafetensorsFile>> m_files;  // format 2: mapped once per file
};

// Step folders (complete ones only) under a checkpoints folder, newest first.
std::vector<std::string> listCheckpoints(const std::string& checkpointsDir);

// The step a step_<N> folder holds (the next step to run), from its name; -1 for another name.
int64_t checkpointStep(const std::string& stepDir);

} // namespace parallax
