#include "core/spec/MachineChecks.h"

#include "core/spec/Estimates.h"
#include "core/spec/IssueList.h"
#include "core/spec/SpecLimits.h"

#include <algorithm>
#include <optional>
#include <string>

namespace parallax {

namespace {

// A local run may put this many ranks (and threads) on each core before it is an error: beyond it
// every rank mostly waits for a core, and a typo of an extra digit is far past it.
constexpr int64_t kMostPerCore = 4;
// An estimate above this share of the memory a run has leaves too little for LibTorch, MPI and the
// rest of the machine (the estimate counts only the training state).
constexpr double kMemoryWarnShare = 0.8;

std::string num(int64_t v) { return std::to_string(v); }

// The fewest blocks train.recompute_blocks may name (with activation checkpointing) for the most
// loaded GPU's estimate to stay within `budget` bytes, and that estimate; none when even
// recomputing every block of up to `blocks` does not.
struct RecomputeFit {
    int64_t blocks;
    double bytes;
};
std::optional<RecomputeFit> fewestRecomputedBlocks(RunSpec spec, int64_t blocks, double budget) {
    spec.train.activation_checkpointing = true;
    const auto need = [&spec](int64_t n) {
        spec.train.recompute_blocks = n;
        return estimate(spec).memory.total();
    };
    if (blocks < 1 || need(blocks) > budget) return std::nullopt;
    int64_t lo = 1, hi = blocks; // the estimate falls as n grows: the first n that fits
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (need(mid) <= budget) hi = mid;
        else lo = mid + 1;
    }
    return RecomputeFit{lo, need(lo)};
}

class MachineChecks {
public:
    MachineChecks(const RunSpec& spec, const MachineInfo& machine, const ModelDims* dims, bool errorsSoFar)
        : s(spec), m_machine(machine), m_dims(dims), m_errorsSoFar(errorsSoFar) {}

    std::vector<SpecIssue> run() {
        checkCores();
        checkMemory();
        return std::move(m_out.list);
    }

private:
    const RunSpec& s;
    const MachineInfo& m_machine;
    const ModelDims* m_dims;
    bool m_errorsSoFar;
    IssueList m_out;

    void error(const std::string& field, const std::string& message, std::vector<std::string> related = {}) {
        m_out.error(field, message, std::move(related));
    }
    void warn(const std::string& field, const std::string& message, std::vector<std::string> related = {}) {
        m_out.warn(field, message, std::move(related));
    }
    bool cuda() const { return s.launch.device == Device::Cuda; }

    void checkCores() {
        const MachineInfo& machine = m_machine;
        const LaunchSpec& l = s.launch;
        if (!layoutUsable(s)) return;
        if (l.processes && (*l.processes < 1 || *l.processes > kMaxProcesses)) return;
        const int64_t ranks = s.processCount();
        const int64_t cores = machine.cores;
        const std::vector<std::string> rankFields = {"parallel.dp", "parallel.tp", "parallel.pp", "launch.processes",
                                                     "launch.target"};
        std::vector<std::string> threadFields = rankFields;
        threadFields.back() = "launch.threads_per_rank";
        if (cores > 0) {
            const std::string perCore = num(ranks / cores) + (ranks % cores ? "+" : "");
            if (ranks > kMostPerCore * cores)
                error("launch.target", "launch.target = \"local\" starts " + num(ranks) +
                                           " ranks (parallel.dp * tp * pp) on this machine's " + num(cores) +
                                           " cores, " + perCore + " per core; at most " + num(kMostPerCore * cores) +
                                           " (" + num(kMostPerCore) +
                                           " per core) can share them: lower parallel.dp, tp or pp, or use "
                                           "launch.target = \"hosts\" or \"slurm\"",
                      rankFields);
            else if (ranks > cores)
                warn("launch.target", "launch.target = \"local\" starts " + num(ranks) + " ranks on this machine's " +
                                          num(cores) + " cores: they take turns on the cores (oversubscribed), so every "
                                                       "step is slower than the layout's figures suggest; use fewer "
                                                       "processes (parallel.dp * tp * pp of at most " + num(cores) +
                                          "), or launch.target = \"hosts\" or \"slurm\"",
                     rankFields);
            const int64_t t = l.threads_per_rank;
            if (t > 0 && countProblem("launch.threads_per_rank", t, 0).empty()) {
                const int64_t threads = t * ranks; // 2^12 * 2^20 at most
                if (threads > kMostPerCore * cores)
                    error("launch.threads_per_rank",
                          "launch.threads_per_rank = " + num(t) + " x " + num(ranks) + " ranks = " + num(threads) +
                              " threads on this machine's " + num(cores) + " cores; use at most " +
                              num(std::max<int64_t>(1, cores / ranks)) +
                              " (cores / ranks), or 0 to divide the cores among the ranks",
                          threadFields);
                else if (threads > cores)
                    warn("launch.threads_per_rank",
                         "launch.threads_per_rank = " + num(t) + " x " + num(ranks) + " ranks = " + num(threads) +
                             " threads on this machine's " + num(cores) +
                             " cores: they take turns (oversubscribed), so every step runs slowly; use "
                             "launch.threads_per_rank = " + num(std::max<int64_t>(1, cores / ranks)) +
                             " (cores / ranks) or 0 to divide the cores among the ranks, or fewer processes",
                         threadFields);
            }
        }
    }

    // The estimate is only meaningful for a spec without errors.
    void checkMemory() {
        if (m_errorsSoFar || hasErrors(m_out.list)) return;
        const MachineInfo& machine = m_machine;
        const int64_t ranks = s.processCount();
        Estimates e;
        try {
            e = estimate(s);
        } catch (const std::exception&) {
            return;
        }
        if (cuda()) {
            if (!machine.gpu_memory_bytes || *machine.gpu_memory_bytes <= 0) return;
            const double need = e.memory.total();
            const double have = double(*machine.gpu_memory_bytes);
            const std::string what = "launch.device = \"cuda\": the most loaded rank needs an estimated " +
                                     formatBytes(need) + " of GPU memory and a GPU here has " + formatBytes(have);
            if (need > have)
                error("launch.device", what + "; " + recomputeAdvice(have) +
                                           "shard the model (parallel.zero, tp, pp), turn on "
                                           "train.activation_checkpointing or lower train.micro_batch",
                      memoryFields());
            else if (need > kMemoryWarnShare * have)
                warn("launch.device", what + ", which leaves little for LibTorch and NCCL themselves", memoryFields());
            return;
        }
        if (machine.ram_bytes <= 0) return;
        // Every stage's dp * tp ranks share this machine's memory.
        double need = 0;
        for (const MemoryEstimate& stage : e.memory_per_stage)
            need += stage.total() * double(s.parallel.dp) * double(s.parallel.tp);
        const double have = double(machine.ram_bytes);
        const std::string what = "launch.device = \"cpu\": " +
                                 (ranks == 1 ? std::string("the rank needs an estimated ")
                                             : "the " + num(ranks) + " ranks need an estimated ") +
                                 formatBytes(need) + " of memory" + (ranks == 1 ? "" : " together") +
                                 " (see the estimates) and this machine has " + formatBytes(have);
        if (need > have)
            error("launch.device", what + "; use a smaller model or train.micro_batch, or spread it over more "
                                          "machines (launch.target = \"hosts\" or \"slurm\") with parallel.tp, pp "
                                          "or zero",
                  memoryFields());
        else if (need > kMemoryWarnShare * have)
            warn("launch.device", what + ", which leaves little for LibTorch, MPI and the rest of the machine",
                 memoryFields());
    }

    // "train.activation_checkpointing with train.recompute_blocks = 23 fits (an estimated 61.0 GiB),
    // or " where some number of recomputed blocks brings the estimate within the share of `have` that
    // leaves room for LibTorch and NCCL; empty where none does, or where the spec already
    // recomputes every block.
    std::string recomputeAdvice(double have) const {
        if (s.train.activation_checkpointing && s.train.recompute_blocks == 0) return {};
        const int64_t blocks = m_dims ? m_dims->layers + m_dims->vision_layers : 0;
        const std::optional<RecomputeFit> fit = fewestRecomputedBlocks(s, blocks, kMemoryWarnShare * have);
        if (!fit) return {};
        return "train.activation_checkpointing with train.recompute_blocks = " + num(fit->blocks) +
               " fits (an estimated " + formatBytes(fit->bytes) + "), or ";
    }

    // What the memory estimate depends on.
    std::vector<std::string> memoryFields() const {
        std::vector<std::string> fields = {"train.micro_batch", "train.precision",
                                                     "train.activation_checkpointing", "train.recompute_blocks",
                                                     "parallel.dp", "parallel.tp",
                                                     "parallel.pp", "parallel.zero", "parallel.stage_layers", "model.kind",
                                           "model.preset"};
        if (m_dims)
            for (const auto& [field, value] : modelDimensionFields(*m_dims)) fields.push_back(field);
        return fields;
    }
};

} // namespace

std::vector<SpecIssue> machineIssues(const RunSpec& spec, const MachineInfo& machine, const ModelDims* dims,
                                     bool errorsSoFar) {
    return MachineChecks(spec, machine, dims, errorsSoFar).run();
}

} // namespace parallax
