#include "core/spec/SampleChecks.h"

#include "core/spec/IssueList.h"
#include "core/spec/ModelKinds.h"
#include "core/spec/QwenImageVaeConfig.h"

#include <stdexcept>
#include <string>

namespace parallax {

namespace {

std::string num(int64_t v) { return std::to_string(v); }

void checkRange(IssueList& out, const char* field, int64_t value, int64_t lo, int64_t hi, const char* what) {
    if (value < lo || value > hi)
        out.error(field, std::string(field) + " = " + num(value) + " is outside " + num(lo) + " to " + num(hi) + " (" +
                             what + ")");
}

} // namespace

std::vector<SpecIssue> sampleIssues(const RunSpec& spec, bool remote) {
    IssueList out;
    const SamplesSpec& a = spec.samples;
    if (a.every < 0) {
        out.error("samples.every", "samples.every = " + num(a.every) + " must be 0 (no samples) or a number of steps");
        return std::move(out.list);
    }
    const ModelKindInfo* kind = modelKindInfo(spec.model.kind);
    if (!kind || a.every == 0) return std::move(out.list);
    if (!readsLatents(*kind) && !reconstructsImages(*kind)) {
        out.warn("samples.every", "samples.every is ignored: model.kind = \"" + std::string(kind->name) +
                                      "\" draws no images (samples are qwen_image's and qwen_image_vae's)",
                 {"model.kind"});
        return std::move(out.list);
    }
    checkRange(out, "samples.count", a.count, 1, 16, "images each time, one per dataset sample");
    checkRange(out, "samples.steps", a.steps, 2, 200, "denoising steps of each image");
    const std::string every = "samples.every = " + num(a.every);
    if (reconstructsImages(*kind)) {
        // Reconstructions by the run's own VAE: no folder to read, its weights whole on each rank.
    } else if (spec.model.from.empty()) {
        out.error("samples.every", every + " needs a VAE to turn the drawn latents into images, and without model.from "
                                           "(random initialization) there is none: set model.from to a diffusers folder "
                                           "with vae/, or samples.every = 0",
                  {"model.from"});
    } else if (!remote) {
        try {
            qwenImageVaeFolder(spec.model.from);
        } catch (const std::invalid_argument& e) {
            out.error("samples.every", every + " decodes with model.from's VAE: " + e.what() +
                                           "; or set samples.every = 0",
                      {"model.from"});
        }
    }
    if (spec.parallel.pp > 1)
        out.error("samples.every", every + ": each rank draws samples with the whole transformer, which parallel.pp = " +
                                       num(spec.parallel.pp) + " splits over stages; use pp = 1 or samples.every = 0",
                  {"parallel.pp"});
    if (spec.parallel.zero >= 3)
        out.error("samples.every", every + ": each rank draws samples with the whole model, which parallel.zero = " +
                                       num(spec.parallel.zero) + " shards; use zero = 2 or less, or samples.every = 0",
                  {"parallel.zero"});
    return std::move(out.list);
}

} // namespace parallax
