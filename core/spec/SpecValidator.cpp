#include "core/spec/SpecValidator.h"

#include "core/spec/ClusterProfile.h"

#include "core/util/Files.h"

#include "core/spec/CheckedMath.h"
#include "core/spec/Estimates.h"
#include "core/spec/FinetuneChecks.h"
#include "core/spec/IssueList.h"
#include "core/spec/LaunchChecks.h"
#include "core/spec/MachineChecks.h"
#include "core/spec/ScheduleInfo.h"
#include "core/spec/LauncherOptions.h"
#include "core/spec/ModelDims.h"
#include "core/spec/ModelKinds.h"
#include "core/spec/PublishedModelChecks.h"
#include "core/spec/RetentionChecks.h"
#include "core/spec/SampleChecks.h"
#include "core/spec/SpecFields.h"
#include "core/spec/SpecIO.h"
#include "core/spec/SpecLimits.h"
#include "core/spec/Suggestions.h"
#include "core/spec/TomlText.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <tuple>

namespace parallax {

namespace {


std::string num(int64_t v) { return std::to_string(v); }
std::string num(double v) { return tomlDouble(v); }
std::string inQuotes(const std::string& s) { return tomlString(s); }
std::string inQuotes(const ChoiceField& c) { return tomlString(c.name()); }
std::string inQuotes(ModelKind k) { return tomlString(choiceName(k)); }

// Adam-style optimizers train at 1e-4 to 1e-2; a rate above 1 moves every weight by more than its
// own size each step (a typo of the exponent, 3e4 for 3e-4), and the loss diverges.
constexpr double kMostUsableLr = 1.0;

// The smallest divisors of n, at most `limit` of them, as "1, 2, 3, 6". Candidates are tried up to
// 2^20 only, so that a large prime costs a millisecond, not years.
std::string divisorList(int64_t n, size_t limit = 8) {
    std::vector<std::string> out;
    const int64_t last = std::min<int64_t>(n, int64_t(1) << 20);
    for (int64_t d = 1; d <= last && out.size() < limit; ++d)
        if (n % d == 0) out.push_back(num(d));
    return joinList(out);
}

// "8 or 12": the multiples of `step` (> 0) around `value` (only the upper one when the lower is 0,
// only the lower one when the upper does not fit in 64 bits).
std::string multiplesAround(int64_t value, int64_t step) {
    const int64_t lower = (value / step) * step;
    const std::optional<int64_t> upper = checkedAdd(lower, step);
    if (!upper) return num(lower);
    return lower > 0 ? num(lower) + " or " + num(*upper) : num(*upper);
}

bool isSafeName(const std::string& name) {
    if (name.empty() || name.size() > 128 || name[0] == '.' || name[0] == '-') return false;
    for (char c : name) {
        const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                        c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

std::string safeName(const std::string& name) {
    std::string out;
    for (char c : name) {
        const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                        c == '_' || c == '-';
        if (ok) out += c;
        else if (!out.empty() && out.back() != '-') out += '-';
    }
    while (!out.empty() && (out.front() == '.' || out.front() == '-')) out.erase(out.begin());
    while (!out.empty() && out.back() == '-') out.pop_back();
    if (out.size() > 128) out.resize(128);
    return out.empty() ? "run" : out;
}

class Checker {
public:
    Checker(const RunSpec& spec, const MachineInfo* machine) : s(spec), m_machine(machine) {}

    std::vector<SpecIssue> run() {
        checkName();
        checkModel();
        m_out.add(finetuneIssues(s, m_haveDims && m_dimsUsable ? &d : nullptr));
        checkData();
        checkTrain();
        checkParallel();
        m_out.add(launchIssues(s));
        checkTelemetry();
        m_out.add(sampleIssues(s, remote()));
        m_out.add(retentionIssues(s));
        if (m_machine && s.launch.target == Target::Local)
            m_out.add(machineIssues(s, *m_machine, m_haveDims && m_dimsUsable ? &d : nullptr, hasErrors(m_out.list)));
        checkUnknownKeys();
        return std::move(m_out.list);
    }

private:
    const RunSpec& s;
    const MachineInfo* m_machine; // null: not checked against a machine
    ModelDims d;
    bool m_haveDims = false;   // the model resolved
    bool m_dimsUsable = false; // and every dimension is at least 1 and within its limit
    IssueList m_out;

    void error(const std::string& field, const std::string& message, std::vector<std::string> related = {}) {
        m_out.error(field, message, std::move(related));
    }
    void warn(const std::string& field, const std::string& message, std::vector<std::string> related = {}) {
        m_out.warn(field, message, std::move(related));
    }

    // The fields that decide the model's dimensions besides the dimension itself: a preset or kind
    // changed can make a dimension that was not set by hand wrong.
    static std::vector<std::string> withModel(std::vector<std::string> fields) {
        fields.push_back("model.kind");
        fields.push_back("model.preset");
        return fields;
    }
    std::vector<std::string> layoutFields() const { return {"parallel.dp", "parallel.tp", "parallel.pp"}; }
    // The fields whose values decide the pipeline's blocks.
    std::vector<std::string> blockFields() const {
        return withModel(modelKindInfo(d.kind).vision_tower ? std::vector<std::string>{"model.layers", "model.vision_layers"}
                                         : std::vector<std::string>{"model.layers"});
    }

    bool cuda() const { return s.launch.device == Device::Cuda; }
    bool remote() const { return s.launch.target == Target::Hosts || s.launch.target == Target::Slurm; }

    bool checkChoice(const std::string& field, const ChoiceField& choice) { return m_out.checkChoice(field, choice); }
    bool checkCount(const std::string& field, int64_t value, int64_t minimum) {
        return m_out.checkCount(field, value, minimum);
    }
    bool layoutUsable() const { return parallax::layoutUsable(s); }

    void checkName() {
        if (s.name.empty()) {
            error("name", "name is empty; name the run, e.g. name = \"gpt-dp2\"");
        } else if (!isSafeName(s.name)) {
            error("name", "name = " + inQuotes(s.name) +
                              " is used as a folder name and may hold only letters, digits, '.', '_' and '-' (not "
                              "first: '.' or '-'; at most 128 characters); use " + inQuotes(safeName(s.name)));
        }
    }

    // ---- model ---------------------------------------------------------------------------------

    void checkModel() {
        if (!resolveDims()) return;
        const ModelKindInfo& kind = modelKindInfo(d.kind);
        bool usable = true;
        for (const auto& [field, value] : modelDimensionFields(d)) usable &= checkCount(field, value, 1);
        m_dimsUsable = usable;
        warnIgnoredModelFields(kind);
        if (!usable) return;
        if (publishedModel(kind)) m_out.add(publishedModelIssues(s, d));
        if (reconstructsImages(kind)) return checkVaeModel();
        checkModelDivisibility(kind);
        checkModelAgainstTp();
    }

    // qwen_image_vae: sizes its architecture fixes, images its downsamplings divide, and convolutions
    // that tensor and pipeline parallelism do not split (one unit, every weight whole on each rank).
    void checkVaeModel() {
        const ModelSpec& m = s.model;
        for (const auto& [field, value] : {std::pair{"model.heads", m.heads}, {"model.ffn", m.ffn},
                                           {"model.vocab", m.vocab}, {"model.seq_len", m.seq_len},
                                           {"model.patch", m.patch}})
            if (value)
                warn(field, std::string(field) + " is ignored for model.kind = " + inQuotes(d.kind) +
                                ": its architecture fixes it (one attention head, no text, a spatial ratio of " +
                                num(d.patch) + ")",
                     {"model.kind"});
        if (d.image_size % d.patch != 0)
            error("model.image_size", "model.image_size = " + num(d.image_size) + " is not a multiple of " +
                                          num(d.patch) + ", the VAE's spatial ratio (three downsamplings by 2); use " +
                                          num((d.image_size / d.patch + 1) * d.patch),
                  {"model.kind"});
        if (s.parallel.tp > 1)
            error("parallel.tp", "model.kind = " + inQuotes(d.kind) + " has no tensor-parallel split: its "
                                 "convolutions are whole on every rank; use parallel.tp = 1 and parallel.dp (with "
                                 "parallel.zero) to spread it",
                  {"model.kind"});
        if (s.parallel.pp > 1)
            error("parallel.pp", "model.kind = " + inQuotes(d.kind) + " is one unit, which a pipeline cannot cut "
                                 "into stages; use parallel.pp = 1 and parallel.dp (with parallel.zero) to spread it",
                  {"model.kind"});
    }

    // The model's dimensions (d); false, with the issue, when the kind, preset or folder gives none.
    bool resolveDims() {
        try {
            d = resolveModel(s);
            m_haveDims = true;
        } catch (const std::invalid_argument& e) {
            const std::string message = e.what();
            // A folder's problems and the dimensions that disagree with it name their field first.
            const std::string named = message.substr(0, message.find(' '));
            if (message.rfind("model.kind", 0) == 0) {
                error("model.kind", message + didYouMean(s.model.kind.name(), s.model.kind.names()));
            } else if (named != "model.preset" && named.rfind("model.", 0) == 0 && specFieldInfo(named)) {
                error(named, message, {"model.from"});
            } else {
                std::vector<std::string> presets = modelPresets(s.model.kind.value());
                presets.push_back("custom");
                error("model.preset", message + didYouMean(s.model.preset, presets), {"model.kind"});
            }
            return false;
        }
        return true;
    }

    // Warnings for the model fields the kind does not read.
    void warnIgnoredModelFields(const ModelKindInfo& kind) {
        const ModelSpec& m = s.model;
        const bool image = kind.images;
        const bool tower = kind.vision_tower;

        if (!image) {
            for (const auto& [field, value] : {std::pair{"model.image_size", m.image_size}, {"model.channels", m.channels},
                                               {"model.patch", m.patch}})
                if (value)
                    warn(field, std::string(field) + " is ignored for model.kind = " + inQuotes(d.kind) +
                                    (tower ? " (its images keep their own size, within data.min_pixels and "
                                             "data.max_pixels)"
                                           : " (it reads no images)"),
                         {"model.kind"});
        }
        for (const auto& [field, value, used] : {std::tuple{"model.kv_heads", m.kv_heads, groupedQueryAttention(kind)},
                                                 std::tuple{"model.vision_ffn", m.vision_ffn, tower}})
            if (value && !used)
                warn(field, std::string(field) + " is used only by model.kind = " +
                                modelKindNames(std::string(field) == "model.kv_heads" ? groupedQueryAttention : readsConversations) +
                                "; it is ignored here",
                     {"model.kind"});
        if (!tower) {
            for (const auto& [field, value] :
                 {std::pair{"model.vision_layers", m.vision_layers}, {"model.vision_dim", m.vision_dim},
                  {"model.vision_heads", m.vision_heads}})
                if (value)
                    warn(field, std::string(field) + " is used only by model.kind = " + modelKindNames(hasVisionTower) +
                                    "; it is ignored here",
                         {"model.kind"});
        }
    }

    // Heads, vision heads and patches that must divide their widths.
    void checkModelDivisibility(const ModelKindInfo& kind) {
        const bool image = kind.images;
        const bool tower = kind.vision_tower;
        if (d.dim % d.heads != 0)
            error("model.heads", "model.dim = " + num(d.dim) + " is not divisible by model.heads = " + num(d.heads) +
                                     "; use heads among " + divisorList(d.dim) + " (each head is dim / heads wide)",
                  withModel({"model.dim"}));
        if (tower && d.vision_dim % d.vision_heads != 0)
            error("model.vision_heads", "model.vision_dim = " + num(d.vision_dim) +
                                            " is not divisible by model.vision_heads = " + num(d.vision_heads) +
                                            "; use vision_heads among " + divisorList(d.vision_dim),
                  withModel({"model.vision_dim"}));
        if (image && d.image_size % d.patch != 0)
            error("model.patch", "model.image_size = " + num(d.image_size) + " is not divisible by model.patch = " +
                                     num(d.patch) + "; use patch among " + divisorList(d.image_size),
                  withModel({"model.image_size"}));
    }

    // Tensor parallelism splits heads, the FFN width and the vocabulary: a tp that divides all. (A
    // vision tower is replicated: its tensors say so.)
    void checkModelAgainstTp() {
        const int64_t tp = s.parallel.tp;
        // An unusable tp is reported by checkParallel; the model is checked against usable ones.
        if (tp > 1 && countProblem("parallel.tp", tp, 1).empty()) {
            const int64_t common = std::gcd(std::gcd(d.heads, d.ffn), d.vocab);
            // Each of these issues names the tp that would divide them all.
            const std::vector<std::string> tpFields =
                withModel({"parallel.tp", "model.heads", "model.ffn", "model.vocab"});
            const std::string choices = common > 1 ? "; choose parallel.tp among " + divisorList(common)
                                                   : "; no parallel.tp above 1 divides model.heads, model.ffn and "
                                                     "model.vocab together: use parallel.tp = 1";
            if (d.heads % tp != 0)
                error("model.heads", "model.heads = " + num(d.heads) + " is not divisible by parallel.tp = " + num(tp) +
                                         choices,
                      tpFields);
            if (d.ffn % tp != 0)
                error("model.ffn", "model.ffn = " + num(d.ffn) + " is not divisible by parallel.tp = " + num(tp) + choices +
                                       ", or set model.ffn = " + multiplesAround(d.ffn, tp),
                      tpFields);
            if (d.vocab % tp != 0)
                error("model.vocab", "model.vocab = " + num(d.vocab) + " is not divisible by parallel.tp = " + num(tp) +
                                         choices + ", or pad it: model.vocab = " +
                                         num((d.vocab / tp + 1) * tp), // both within their limits: no overflow
                      tpFields);
        }
    }

    // ---- data ----------------------------------------------------------------------------------

    void checkData() {
        const DataSpec& data = s.data;
        checkChoice("data.on_bad_sample", data.on_bad_sample);
        if (!checkChoice("data.kind", data.kind)) return;

        if (m_haveDims && !checkLatentData()) return;
        if (m_haveDims) {
            const bool images = data.kind == DataKind::FashionMnist || data.kind == DataKind::ImageFolder;
            const bool imageModel = modelKindInfo(d.kind).images;
            if (data.kind == DataKind::Text && imageModel)
                error("data.kind", "data.kind = \"text\" is plain text for model.kind = " + modelKindNames(readsText) +
                                       "; model.kind = " +
                                       inQuotes(d.kind) + " trains on images: use data.kind = "
                                                        "\"fashion-mnist\", \"image-folder\" or \"synthetic\"",
                  {"model.kind"});
            if (images && !imageModel)
                error("data.kind", "data.kind = " + inQuotes(data.kind) + " holds images, which model.kind = " +
                                       inQuotes(d.kind) + " cannot read; use data.kind = \"text\" or \"synthetic\", or " +
                                       "model.kind = " + modelKindNames(readsImages),
                  {"model.kind"});
            // Text is read as bytes: every byte value needs a token. (Images of any size are
            // resized to model.image_size and model.channels by the loaders.)
            if (data.kind == DataKind::Text && hasVocabulary(modelKindInfo(d.kind)) && d.vocab < 256)
                error("model.vocab", "model.vocab = " + num(d.vocab) + " is too small for data.kind = \"text\", "
                                     "which reads text as bytes; set model.vocab to 256 or more",
                  withModel({"data.kind"}));
        }
        m_out.add(conversationDataIssues(s, m_haveDims && m_dimsUsable ? &d : nullptr, remote()));
        if (data.kind != DataKind::Conversations) checkDataPath();
    }

    // data.kind = "latents" is what a latent model reads, and all it reads besides synthetic data.
    // False when that is settled (an error, or latents whose folder was checked).
    bool checkLatentData() {
        const DataSpec& data = s.data;
        const bool latentModel = readsLatents(modelKindInfo(d.kind));
        if (data.kind == DataKind::Latents && !latentModel) {
            error("data.kind", "data.kind = \"latents\" holds VAE latents and prompt states, which model.kind = " +
                                   inQuotes(d.kind) + " cannot read; use model.kind = " + modelKindNames(readsLatents),
                  {"model.kind"});
            return false;
        }
        if (!latentModel || data.kind == DataKind::Synthetic) return true;
        if (data.kind != DataKind::Latents) {
            error("data.kind", "model.kind = " + inQuotes(d.kind) + " trains on VAE latents and prompt states: use "
                                   "data.kind = \"latents\" (an image-caption dataset, encoded in the step or once by "
                                   "parallax-cli cache, or a folder of safetensors shards: docs/spec.md) or \"synthetic\"",
                  {"model.kind"});
            return false;
        }
        if (data.path.empty())
            error("data.path", "data.path is empty; data.kind = \"latents\" reads an image-caption dataset "
                               "(through its cache) or a folder of latent shards (*.safetensors): set data.path",
                  {"data.kind"});
        else if (!isDirectory(data.path) && !isRegularFile(data.path) && !remote())
            error("data.path", "data.path = " + inQuotes(data.path) + " does not exist; data.kind = \"latents\" "
                               "reads an image-caption dataset (metadata.csv, .json, .jsonl, or a folder of images "
                               "with .txt captions) through its cache, or a folder of latent shards (*.safetensors)",
                  {"data.kind"});
        // An image-caption dataset's images are cached at aspect buckets of at most max_pixels.
        if (data.max_pixels < 256)
            error("data.max_pixels", "data.max_pixels = " + num(data.max_pixels) + " is below one 16 x 16 aspect bucket "
                                     "(256 pixels), the least an image is cached at",
                  {"data.kind"});
        return false;
    }

    void checkDataPath() {
        const DataSpec& data = s.data;
        if (data.kind == DataKind::Synthetic) {
            if (!data.path.empty())
                warn("data.path", "data.path is ignored for data.kind = \"synthetic\" (generated data)",
                  {"data.kind"});
            return;
        }
        // The path is checked on this machine; on other hosts the worker checks it again before
        // training, so a path that exists only there is a warning here.
        auto missing = [&](const std::string& message) {
            if (remote())
                warn("data.path", message + " (checked on this machine; launch.target = " + inQuotes(s.launch.target) +
                                      " reads it on the compute nodes)",
                     {"data.kind", "launch.target"});
            else
                error("data.path", message, {"data.kind"});
        };
        if (data.kind == DataKind::FashionMnist) {
            const std::string path = data.path.empty() ? defaultDataPath(data.kind) : data.path;
            const bool complete = isDirectory(path) && pathExists(path + "/train-images-idx3-ubyte.gz") &&
                                  pathExists(path + "/train-labels-idx1-ubyte.gz");
            if (complete) return;
            if (data.path.empty())
                missing("data.kind = \"fashion-mnist\" reads " + path +
                        ", which is missing; install the Debian package dataset-fashion-mnist or set data.path");
            else
                missing("data.path = " + inQuotes(path) +
                        " has no Fashion-MNIST files (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz); set "
                        "data.path to their folder, or leave it empty to use " + defaultDataPath(data.kind));
            return;
        }
        const bool text = data.kind == DataKind::Text;
        // A model folder's tokenizer reads .txt and .jsonl documents, one file or a folder of them.
        const bool tokenized = text && !s.model.from.empty();
        const std::string what = tokenized ? "a .txt or .jsonl file or a folder of them"
                                 : text    ? "a text file"
                                           : "a folder of class subfolders holding .pgm/.ppm images";
        if (data.path.empty()) {
            error("data.path", "data.path is empty; data.kind = " + inQuotes(data.kind) + " reads " + what +
                                   ": set data.path",
                  {"data.kind"});
            return;
        }
        const bool found = tokenized ? isRegularFile(data.path) || isDirectory(data.path)
                           : text    ? isRegularFile(data.path)
                                     : isDirectory(data.path);
        if (!found) {
            missing("data.path = " + inQuotes(data.path) + " does not exist or is not " + what + "; set data.path to " +
                    what);
            return;
        }
        if (text && !tokenized && m_dimsUsable) {
            const int64_t bytes = fileSize(data.path);
            if (bytes >= 0 && bytes < d.seq_len + 1)
                error("data.path", "data.path = " + inQuotes(data.path) + " has " + num(bytes) +
                                       " bytes, but one sample needs model.seq_len + 1 = " + num(d.seq_len + 1) +
                                       "; use a longer text or a smaller model.seq_len",
                  withModel({"model.seq_len"}));
        }
    }

    // ---- train ---------------------------------------------------------------------------------

    void checkTrain() {
        const TrainSpec& t = s.train;
        const bool stepsOk = checkCount("train.steps", t.steps, 1);
        const bool globalOk = checkCount("train.global_batch", t.global_batch, 1);
        const bool microOk = checkCount("train.micro_batch", t.micro_batch, 1);
        if (globalOk && microOk && countProblem("parallel.dp", s.parallel.dp, 1).empty()) {
            // Both within their limits: the product fits, and is at least 1.
            const int64_t per = s.parallel.dp * t.micro_batch;
            if (t.global_batch % per != 0)
                error("train.global_batch", "train.global_batch = " + num(t.global_batch) +
                                                " is not divisible by parallel.dp * train.micro_batch = " + num(per) +
                                                "; use " + multiplesAround(t.global_batch, per),
                  {"parallel.dp", "train.micro_batch"});
        }
        if (!(t.lr > 0) || !std::isfinite(t.lr))
            error("train.lr", "train.lr = " + num(t.lr) + " must be a number greater than 0, e.g. 3e-4");
        else if (t.lr > kMostUsableLr)
            warn("train.lr", "train.lr = " + num(t.lr) +
                                 " is far above any usable rate (typical 1e-4 to 1e-2); the loss will diverge: use "
                                 "e.g. 3e-4");
        if (!(t.min_lr >= 0) || !std::isfinite(t.min_lr) || (t.lr > 0 && t.min_lr > t.lr))
            error("train.min_lr", "train.min_lr = " + num(t.min_lr) + " must be between 0 and train.lr = " + num(t.lr) +
                                      " (the floor of the cosine decay)",
                  {"train.lr"});
        if (t.warmup < 0) {
            error("train.warmup", "train.warmup = " + num(t.warmup) + " must be 0 or more");
        } else if (checkCount("train.warmup", t.warmup, 0) && stepsOk && t.warmup >= t.steps) {
            warn("train.warmup", "train.warmup = " + num(t.warmup) + " is not less than train.steps = " + num(t.steps) +
                                     ": the learning rate never reaches train.lr; use a warmup below " + num(t.steps),
                 {"train.steps", "train.lr"});
        }
        if (!(t.weight_decay >= 0) || !std::isfinite(t.weight_decay))
            error("train.weight_decay", "train.weight_decay = " + num(t.weight_decay) + " must be 0 or more");
        if (!(t.beta1 >= 0 && t.beta1 < 1))
            error("train.beta1", "train.beta1 = " + num(t.beta1) + " must be in [0, 1), e.g. 0.9");
        if (!(t.beta2 >= 0 && t.beta2 < 1))
            error("train.beta2", "train.beta2 = " + num(t.beta2) + " must be in [0, 1), e.g. 0.95");
        if (!(t.eps > 0) || !std::isfinite(t.eps))
            error("train.eps", "train.eps = " + num(t.eps) + " must be greater than 0, e.g. 1e-8");
        if (checkChoice("train.precision", t.precision) && t.precision == Precision::Bf16 && !cuda())
            error("train.precision", "train.precision = bf16 needs launch.device = cuda; use train.precision = fp32 on "
                                     "cpu",
                  {"launch.device"});
        if (!(t.grad_clip >= 0) || !std::isfinite(t.grad_clip))
            error("train.grad_clip", "train.grad_clip = " + num(t.grad_clip) + " must be 0 (off) or more");
        if (t.recompute_blocks < 0)
            error("train.recompute_blocks", "train.recompute_blocks = " + num(t.recompute_blocks) +
                                                " must be 0 (every block) or more");
        else if (t.recompute_blocks > 0 && !t.activation_checkpointing)
            error("train.recompute_blocks",
                  "train.recompute_blocks = " + num(t.recompute_blocks) +
                      " recomputes blocks only with activation checkpointing; set train.activation_checkpointing = "
                      "true, or train.recompute_blocks = 0",
                  {"train.activation_checkpointing"});
        if (t.checkpoint_every < 0) {
            error("train.checkpoint_every", "train.checkpoint_every = " + num(t.checkpoint_every) +
                                                " must be 0 (only at stop and at the end) or more");
        } else if (stepsOk && t.checkpoint_every > t.steps) {
            warn("train.checkpoint_every", "train.checkpoint_every = " + num(t.checkpoint_every) +
                                               " is more than train.steps = " + num(t.steps) +
                                               ": only the final checkpoint is written",
                  {"train.steps"});
        }
    }

    // ---- parallel ------------------------------------------------------------------------------

    std::string blocksText() const {
        if (modelKindInfo(d.kind).vision_tower)
            return "model.vision_layers + model.layers = " + num(d.vision_layers) + " + " + num(d.layers) + " = " +
                   num(pipelineBlocks(d));
        return "model.layers = " + num(d.layers);
    }

    void checkParallel() {
        const ParallelSpec& p = s.parallel;
        const bool dpOk = checkCount("parallel.dp", p.dp, 1);
        const bool tpOk = checkCount("parallel.tp", p.tp, 1);
        const bool ppOk = checkCount("parallel.pp", p.pp, 1);
        if (dpOk && tpOk && ppOk && s.worldSize() > kMaxProcesses)
            error("parallel.dp", "parallel.dp * tp * pp = " + num(p.dp) + " * " + num(p.tp) + " * " + num(p.pp) + " = " +
                                     num(s.worldSize()) + " processes is more than " + limitText(kMaxProcesses) +
                                     ", the most Parallax accepts (the largest training runs use about a hundred "
                                     "thousand processes)",
                  {"parallel.tp", "parallel.pp"});
        if (p.zero < 0 || p.zero > 3) {
            error("parallel.zero", "parallel.zero = " + num(p.zero) +
                                       " is unknown; use 0 (off), 1 (optimizer states), 2 (+ gradients) or 3 (+ weights)");
        } else if (p.zero > 0 && p.dp == 1) {
            warn("parallel.zero", "parallel.zero = " + num(p.zero) +
                                      " has no effect with parallel.dp = 1 (nothing to shard over); set parallel.zero = 0 "
                                      "or parallel.dp > 1",
                 {"parallel.dp"});
        }
        const bool scheduleOk = checkChoice("parallel.schedule", p.schedule);
        const ScheduleInfo* info = scheduleInfo(p.schedule);
        const bool interleaved = info && info->chunked;
        const bool zeroBubble = info && info->splitBackward;
        const bool vsOk = checkCount("parallel.virtual_stages", p.virtual_stages, 1);
        if (vsOk && info && info->refusesChunks && p.virtual_stages > 1)
            error("parallel.virtual_stages", "parallel.virtual_stages = " + num(p.virtual_stages) +
                                                 " cannot be used with parallel.schedule = \"" + p.schedule.name() +
                                                 "\", which runs one "
                                                 "model chunk per stage; set parallel.virtual_stages = 1, or use "
                                                 "parallel.schedule = \"interleaved\" for model chunks",
                  {"parallel.schedule"});
        else if (vsOk && scheduleOk && !interleaved && p.virtual_stages > 1)
            warn("parallel.virtual_stages", "parallel.virtual_stages = " + num(p.virtual_stages) +
                                                " is used only by parallel.schedule = \"interleaved\"; it is ignored here",
                  {"parallel.schedule"});
        // ZeRO-3 reduces and frees each unit's gradients right after its backward, before zb1's
        // deferred weight-gradient passes have added theirs.
        if (zeroBubble && p.zero == 3)
            error("parallel.zero", "parallel.zero = 3 cannot be used with parallel.schedule = \"zb1\": ZeRO-3 reduces "
                                   "each unit's gradients after its backward, before zb1's weight-gradient passes; use "
                                   "parallel.zero = 2 (or less) with zb1, or parallel.schedule = \"1f1b\" with ZeRO-3",
                  {"parallel.schedule"});
        if (ppOk && zeroBubble && p.pp == 1)
            warn("parallel.schedule", "parallel.schedule = \"zb1\" fills pipeline bubbles with weight-gradient passes, "
                                      "and parallel.pp = 1 has none: it runs as \"1f1b\"; set parallel.pp > 1 or "
                                      "parallel.schedule = \"1f1b\"",
                 {"parallel.pp"});

        if (checkChoice("parallel.stage_split", p.stage_split) && p.stage_split == StageSplit::Profile) {
            if (interleaved && p.virtual_stages > 1)
                error("parallel.stage_split", "parallel.stage_split = \"profile\" cannot be used with parallel.schedule "
                                              "= \"interleaved\", which splits the blocks into equal chunks; use "
                                              "\"flops\", or parallel.schedule = \"1f1b\"",
                      {"parallel.schedule"});
            else if (ppOk && p.pp == 1)
                warn("parallel.stage_split", "parallel.stage_split = \"profile\" balances pipeline stages, and "
                                             "parallel.pp = 1 has one: it has no effect",
                     {"parallel.pp"});
        }
        if (ppOk && vsOk) checkPipeline(interleaved, scheduleOk);

        if (!(p.bucket_mb > 0) || !std::isfinite(p.bucket_mb))
            error("parallel.bucket_mb", "parallel.bucket_mb = " + num(p.bucket_mb) +
                                            " must be greater than 0 (gradient bucket size in MiB, e.g. 25)");
        else if (p.bucket_mb > kMaxBucketMb)
            error("parallel.bucket_mb", "parallel.bucket_mb = " + num(p.bucket_mb) + " is more than " +
                                            num(kMaxBucketMb) + " MiB, the most Parallax accepts (buckets of a few "
                                                                "dozen MiB keep the reduction overlapped; e.g. 25)");
        if (checkChoice("parallel.reduce_dtype", p.reduce_dtype) && p.reduce_dtype == Precision::Bf16 && !cuda())
            error("parallel.reduce_dtype", "parallel.reduce_dtype = bf16 needs launch.device = cuda (NCCL); MPI "
                                           "reduces on cpu in fp32: use parallel.reduce_dtype = fp32",
                  {"launch.device"});
    }

    // pp and virtual_stages are within their limits here.
    void checkPipeline(bool interleaved, bool scheduleOk) {
        if (interleaved) checkModelChunks();
        checkBlocksPerStage(interleaved);
        if (scheduleOk) checkPipelineMicroBatches(interleaved);
    }

    // What a schedule that runs model chunks needs of the pipeline.
    void checkModelChunks() {
        const ParallelSpec& p = s.parallel;
        const int64_t pp = p.pp;
        const int64_t v = p.virtual_stages;
        if (pp < 2)
            error("parallel.schedule", "parallel.schedule = \"interleaved\" needs parallel.pp of 2 or more; use "
                                       "\"1f1b\" without a pipeline",
              {"parallel.pp"});
        if (v < 2)
            error("parallel.virtual_stages", "parallel.schedule = \"interleaved\" needs parallel.virtual_stages of 2 "
                                             "or more (model chunks per stage)",
              {"parallel.schedule"});
        if (!p.stage_layers.empty())
            error("parallel.stage_layers", "parallel.stage_layers cannot be used with parallel.schedule = "
                                           "\"interleaved\" (chunks are split evenly); remove it",
              {"parallel.schedule"});
    }

    // The model's blocks over the stages (and chunks).
    void checkBlocksPerStage(bool interleaved) {
        const ParallelSpec& p = s.parallel;
        const int64_t pp = p.pp;
        const int64_t v = p.virtual_stages;
        // A model of one unit (the VAE) has its pipeline refused with the model.
        if (m_haveDims && m_dimsUsable && !reconstructsImages(modelKindInfo(d.kind))) {
            const int64_t blocks = pipelineBlocks(d);
            if (interleaved && pp >= 2 && v >= 2) {
                const int64_t chunks = pp * v; // 2^20 * 2^14 at most
                if (blocks % chunks != 0) {
                    error("parallel.virtual_stages",
                          blocksText() + " blocks are not divisible by parallel.pp * parallel.virtual_stages = " +
                              num(chunks) + "; choose pp and virtual_stages whose product divides " + num(blocks) +
                              " (among " + divisorList(blocks, 12) + ")",
                          [&] {
                              std::vector<std::string> related = blockFields();
                              related.insert(related.begin(), {"parallel.pp", "parallel.schedule"});
                              return related;
                          }());
                }
            } else if (!interleaved && p.stage_layers.empty() && pp > 1) {
                if (blocks < pp)
                    error("parallel.pp", "parallel.pp = " + num(pp) + " is more than the " + num(blocks) +
                                             " blocks of the model (" + blocksText() + "); use parallel.pp among " +
                                             divisorList(blocks),
                          blockFields());
                // A split by measured time is chosen by a probe before the run, at any block count.
                else if (blocks % pp != 0 && p.stage_split != StageSplit::Profile)
                    error("parallel.pp", blocksText() + " blocks are not divisible by parallel.pp = " + num(pp) +
                                             "; use parallel.pp among " + divisorList(blocks) +
                                             ", or give the blocks of each stage in parallel.stage_layers",
                          [&] {
                              std::vector<std::string> related = blockFields();
                              related.push_back("parallel.stage_layers");
                              return related;
                          }());
            }
            if (!interleaved && !p.stage_layers.empty()) checkStageLayers(blocks);
        } else if (!interleaved && !p.stage_layers.empty() && static_cast<int64_t>(p.stage_layers.size()) != pp) {
            error("parallel.stage_layers", "parallel.stage_layers has " + num(int64_t(p.stage_layers.size())) +
                                               " entries but parallel.pp = " + num(pp) + "; give one block count per stage",
                  {"parallel.pp"});
        }
    }

    // Pipeline micro-batches are the accumulation steps of one optimizer step.
    void checkPipelineMicroBatches(bool interleaved) {
        const ParallelSpec& p = s.parallel;
        const int64_t pp = p.pp;
        const int64_t v = p.virtual_stages;
        const int64_t m = s.accumulation();
        if (pp > 1 && m > 0) {
            // The batch of one micro-batch round over the pipeline; may not fit in 64 bits.
            const std::optional<int64_t> round = checkedMul(pp, s.parallel.dp, s.train.micro_batch);
            if (m < pp) {
                const double bubble = pipelineBubble(pp, m, p.schedule.value(), interleaved ? v : 1);
                warn("train.global_batch",
                     "parallel.pp = " + num(pp) + " runs only " + num(m) +
                         " micro-batches per step (train.global_batch / (parallel.dp * train.micro_batch)): the pipeline "
                         "idles " + num(int64_t(std::lround(bubble * 100))) + "% of the time; use at least " + num(pp) +
                         (round ? ", e.g. train.global_batch = " + num(*round) : std::string()),
                     {"parallel.pp", "parallel.dp", "train.micro_batch", "parallel.schedule"});
            }
            if (interleaved && m % pp != 0)
                error("train.global_batch", "parallel.schedule = \"interleaved\" runs micro-batches in groups of "
                                            "parallel.pp = " + num(pp) + ", but a step has " + num(m) +
                                            " (train.global_batch / (parallel.dp * train.micro_batch))" +
                                            (round ? "; use train.global_batch = " +
                                                         multiplesAround(s.train.global_batch, *round)
                                                   : std::string()),
                      {"parallel.pp", "parallel.schedule", "parallel.dp", "train.micro_batch"});
        }
    }

    void checkStageLayers(int64_t blocks) {
        const ParallelSpec& p = s.parallel;
        if (static_cast<int64_t>(p.stage_layers.size()) != p.pp) {
            error("parallel.stage_layers", "parallel.stage_layers has " + num(int64_t(p.stage_layers.size())) +
                                               " entries but parallel.pp = " + num(p.pp) +
                                               "; give one block count per stage",
                  {"parallel.pp"});
            return;
        }
        int64_t sum = 0;
        for (size_t i = 0; i < p.stage_layers.size(); ++i) {
            if (p.stage_layers[i] < 1)
                error("parallel.stage_layers", "parallel.stage_layers[" + num(int64_t(i)) + "] = " +
                                                   num(p.stage_layers[i]) + " must be at least 1: every stage holds a block");
            sum = saturatingAdd(sum, p.stage_layers[i]);
        }
        if (sum != blocks)
            error("parallel.stage_layers", "parallel.stage_layers adds up to " +
                                               (sum == std::numeric_limits<int64_t>::max() ? std::string("more than 2^63")
                                                                                           : num(sum)) +
                                               " blocks but the model has " + num(blocks) + " (" + blocksText() +
                                               "); make the counts sum to " + num(blocks),
                  blockFields());
    }

    // ---- telemetry -----------------------------------------------------------------------------

    void checkTelemetry() {
        const TelemetrySpec& t = s.telemetry;
        if (t.device_sample_ms < 50)
            error("telemetry.device_sample_ms", "telemetry.device_sample_ms = " + num(t.device_sample_ms) +
                                                    " is below 50: sampling that often costs more than it shows; use 50 "
                                                    "or more (e.g. 500)");
        else
            checkCount("telemetry.device_sample_ms", t.device_sample_ms, 50);
        if (t.span_every < 0)
            error("telemetry.span_every", "telemetry.span_every = " + num(t.span_every) +
                                              " must be 0 (never record spans) or more");
        if (t.step_every < 1)
            error("telemetry.step_every", "telemetry.step_every = " + num(t.step_every) +
                                              " must be at least 1 (a step event every N steps)");
        if (t.hang_after_s < 5)
            error("telemetry.hang_after_s", "telemetry.hang_after_s = " + num(t.hang_after_s) +
                                                " must be at least 5 (seconds without a step before a hang is named)");
        else
            checkCount("telemetry.hang_after_s", t.hang_after_s, 5);
        checkChoice("telemetry.on_hang", t.on_hang);
        if (t.hang_timeout_s < 1)
            error("telemetry.hang_timeout_s", "telemetry.hang_timeout_s = " + num(t.hang_timeout_s) +
                                                  " must be at least 1 (seconds a named hang lasts before on_hang = "
                                                  "\"fail\" ends the run)");
        else
            checkCount("telemetry.hang_timeout_s", t.hang_timeout_s, 1);
    }

    // ---- keys this version does not know -------------------------------------------------------

    void checkUnknownKeys() {
        try {
            m_out.add(unknownKeys(s));
        } catch (const std::exception& e) {
            // The kept text comes from a reader; it fails to read only when set by hand.
            warn("spec", std::string("the unknown keys kept with the spec cannot be read: ") + e.what());
        }
    }
};

} // namespace

std::vector<SpecIssue> validateSpec(const RunSpec& spec) {
    return Checker(spec, nullptr).run();
}

std::vector<SpecIssue> validateSpec(const RunSpec& spec, const MachineInfo& machine) {
    return Checker(spec, &machine).run();
}

bool hasErrors(const std::vector<SpecIssue>& issues) {
    for (const SpecIssue& issue : issues)
        if (!issue.warning) return true;
    return false;
}

std::string defaultDataPath(const Choice<DataKind>& dataKind) {
    if (dataKind == DataKind::FashionMnist) return "/usr/share/datasets/fashion-mnist";
    return "";
}

} // namespace parallax
