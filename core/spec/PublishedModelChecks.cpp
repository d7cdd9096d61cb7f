#include "core/spec/PublishedModelChecks.h"

#include "core/spec/IssueList.h"
#include "core/spec/ModelKinds.h"
#include "core/spec/SpecLimits.h"
#include "core/spec/Suggestions.h"
#include "core/spec/TomlText.h"
#include "core/util/Files.h"

#include <numeric>

namespace parallax {

namespace {

std::string num(int64_t v) { return std::to_string(v); }

std::string divisors(int64_t n) {
    std::vector<std::string> out;
    for (int64_t d = 1; d <= n && d <= (int64_t(1) << 20) && out.size() < 8; ++d)
        if (n % d == 0) out.push_back(num(d));
    return joinList(out);
}

std::string sectionText(const std::vector<int64_t>& section) {
    std::string text = "[";
    for (size_t i = 0; i < section.size(); ++i) text += (i ? ", " : "") + num(section[i]);
    return text + "]";
}

void checkRotary(const ModelDims& d, const ModelKindInfo& kind, IssueList& issues) {
    const int64_t head = d.headDim();
    if (head % 2 != 0) {
        issues.error("model.heads", "model.dim / model.heads = " + num(d.dim) + " / " + num(d.heads) + " = " + num(head) +
                                        " is odd; rotary embeddings turn pairs of a head's values: choose heads "
                                        "with an even head width",
                     {"model.dim"});
        return;
    }
    if (!kind.vision_tower && !readsLatents(kind)) return;
    const int64_t pairs = std::accumulate(d.mrope_section.begin(), d.mrope_section.end(), int64_t(0));
    if (pairs != head / 2)
        issues.error("model.heads", "model.dim / model.heads = " + num(head) + " gives " + num(head / 2) +
                                        " rotary pairs a head, but the model's mrope_section " +
                                        sectionText(d.mrope_section) + " shares " + num(pairs) +
                                        " among its three position axes; keep the head width of the preset or the "
                                        "folder (" + num(2 * pairs) + ")",
                     {"model.dim", "model.preset", "model.from"});
    if (d.vision_heads > 0 && (d.vision_dim / d.vision_heads) % 4 != 0)
        issues.error("model.vision_heads", "model.vision_dim / model.vision_heads = " + num(d.vision_dim / d.vision_heads) +
                                               " is not a multiple of 4; the tower's 2D rotary embedding gives a "
                                               "quarter of each head to rows and a quarter to columns",
                     {"model.vision_dim"});
}

} // namespace

std::vector<SpecIssue> publishedModelIssues(const RunSpec& spec, const ModelDims& d) {
    IssueList issues;
    const ModelKindInfo& kind = modelKindInfo(d.kind);
    if (!kind.trains)
        issues.error("model.kind", "model.kind = " + tomlString(kind.name) +
                                       " has no model in this build's worker yet: the spec, its estimates and a "
                                       "folder's check work, a run does not start");
    // The tied copies meet where the first and the last stage do: the pipeline group of two.
    if (d.tie_embeddings && spec.parallel.pp > 2)
        issues.error("parallel.pp", "parallel.pp = " + num(spec.parallel.pp) + ", but this model ties lm_head to "
                                    "embed_tokens (tie_word_embeddings = true): the first stage's embedding and the "
                                    "last stage's head add their gradients over a pipeline of at most 2 stages; use "
                                    "parallel.pp = 1 or 2 (and data or tensor parallelism for the rest)",
                     {spec.model.from.empty() ? "model.preset" : "model.from"});
    if (d.heads % d.kvHeads() != 0)
        issues.error("model.kv_heads", "model.heads = " + num(d.heads) + " is not divisible by model.kv_heads = " +
                                           num(d.kvHeads()) + "; each key/value head serves heads / kv_heads query "
                                           "heads: use kv_heads among " + divisors(d.heads),
                     {"model.heads", "model.kind", "model.preset"});
    checkRotary(d, kind, issues);
    if (d.max_positions > 0 && d.seq_len > d.max_positions)
        issues.warn("model.seq_len", "model.seq_len = " + num(d.seq_len) + " is more than the " + num(d.max_positions) +
                                         " positions the model was trained for (max_position_embeddings)");
    const ModelSpec& m = spec.model;
    if (!m.from.empty() && m.preset != ModelSpec().preset && m.preset != "custom")
        issues.warn("model.preset", "model.preset = " + tomlString(m.preset) +
                                        " is ignored with model.from: the folder's config gives the sizes",
                    {"model.from"});
    return issues.list;
}

std::vector<SpecIssue> conversationDataIssues(const RunSpec& spec, const ModelDims* d, bool remote) {
    IssueList issues;
    const DataSpec& data = spec.data;
    const ModelKindInfo* kind = modelKindInfo(spec.model.kind);
    const bool conversations = data.kind == DataKind::Conversations;
    const bool tower = kind && kind->vision_tower && publishedModel(*kind);
    if (!data.on_truncate.known())
        issues.error("data.on_truncate", "data.on_truncate = " + tomlString(data.on_truncate.name()) +
                                             " is unknown; use one of " + joinList(data.on_truncate.names()) +
                                             didYouMean(data.on_truncate.name(), data.on_truncate.names()));
    const DataSpec defaults;
    if (!conversations) {
        if (data.min_pixels != defaults.min_pixels)
            issues.warn("data.min_pixels", "data.min_pixels is used only with data.kind = \"conversations\"; it is "
                                           "ignored here", {"data.kind"});
        if (data.on_truncate != defaults.on_truncate.value() && data.on_truncate.known())
            issues.warn("data.on_truncate", "data.on_truncate is used only with data.kind = \"conversations\"; it is "
                                            "ignored here", {"data.kind"});
    }
    if (!tower && data.max_pixels != defaults.max_pixels)
        issues.warn("data.max_pixels", "data.max_pixels is used only by model.kind = \"qwen2_5_vl\"; it is ignored here",
                    {"model.kind"});
    bool pixelsOk = true;
    for (const auto& [field, value, least] : {std::tuple{"data.max_pixels", data.max_pixels, int64_t(784)},
                                              std::tuple{"data.min_pixels", data.min_pixels, int64_t(1)}}) {
        const std::string problem = countProblem(field, value, least);
        if (problem.empty()) continue;
        pixelsOk = false;
        issues.error(field, problem + (least > 1 ? " (28 x 28 pixels make one visual token)" : ""));
    }
    if (pixelsOk && data.min_pixels > data.max_pixels)
        issues.error("data.min_pixels", "data.min_pixels = " + num(data.min_pixels) + " is more than data.max_pixels = " +
                                            num(data.max_pixels) + "; every image is resized between the two",
                     {"data.max_pixels"});
    if (!conversations) return issues.list;

    if (kind && !kind->conversations)
        issues.error("data.kind", "data.kind = \"conversations\" is read by model.kind = " +
                                      modelKindNames(readsConversations) + "; model.kind = " + tomlString(kind->name) +
                                      " reads other data",
                     {"model.kind"});
    if (data.path.empty()) {
        issues.error("data.path", "data.path is empty; data.kind = \"conversations\" reads a JSON or JSONL file of "
                                  "conversations (LLaVA, ShareGPT or messages), or a folder of them: set data.path",
                     {"data.kind"});
    } else if (!isRegularFile(data.path) && !isDirectory(data.path)) {
        const std::string message = "data.path = " + tomlString(data.path) +
                                    " does not exist; set it to a JSON or JSONL file of conversations or a folder of them";
        if (remote)
            issues.warn("data.path", message + " (checked on this machine; the compute nodes read it)", {"launch.target"});
        else
            issues.error("data.path", message, {"data.kind"});
    }
    if (tower && d && pixelsOk) {
        // Every sample with an image needs its visual tokens and the two that mark them.
        const int64_t tokens = d->visualTokens() + 2;
        if (tokens > d->seq_len)
            issues.error("data.max_pixels", "an image of data.max_pixels = " + num(data.max_pixels) + " takes up to " +
                                                num(tokens) + " tokens with its vision_start and vision_end, more than "
                                                "model.seq_len = " + num(d->seq_len) +
                                                ": no sample with an image fits; lower data.max_pixels or raise "
                                                "model.seq_len",
                         {"model.seq_len"});
    }
    return issues.list;
}

} // namespace parallax
