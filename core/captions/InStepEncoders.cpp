#include "core/captions/InStepEncoders.h"

#include "core/formats/FormatError.h"
#include "core/formats/SafetensorsFile.h"
#include "core/spec/ModelKinds.h"
#include "core/util/Files.h"

#include <functional>
#include <stdexcept>

namespace parallax {

namespace {

bool endsWith(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The values of the tensors `keep` takes in the .safetensors files of `folder`.
int64_t valuesIn(const std::string& folder, const std::function<bool(const std::string&)>& keep) {
    if (!isDirectory(folder))
        throw std::invalid_argument(folder + " is not a folder: model.from must be a Qwen-Image pipeline folder "
                                    "(text_encoder/, vae/, transformer/) for a run that encodes in its steps");
    int64_t values = 0;
    for (const std::string& name : listDirectory(folder)) {
        if (!endsWith(name, ".safetensors")) continue;
        try {
            const SafetensorsFile file(joinPath(folder, name));
            for (const TensorInfo& t : file.tensors()) {
                if (!keep(t.name)) continue;
                int64_t n = 1;
                for (int64_t side : t.shape) n *= side;
                values += n;
            }
        } catch (const FormatError& e) {
            throw std::invalid_argument(e.what());
        }
    }
    return values;
}

} // namespace

std::optional<InStepEncoders> inStepEncoders(const RunSpec& spec, const LatentCacheStatus& cache) {
    const ModelKindInfo* kind = modelKindInfo(spec.model.kind);
    if (kind == nullptr || !readsLatents(*kind) || spec.data.kind != DataKind::Latents || spec.model.from.empty() ||
        cache.complete())
        return std::nullopt;
    InStepEncoders e;
    e.text_values = valuesIn(joinPath(spec.model.from, "text_encoder"), [](const std::string&) { return true; });
    e.vae_values = valuesIn(joinPath(spec.model.from, "vae"), [](const std::string& name) {
        return name.rfind("encoder.", 0) == 0 || name.rfind("quant_conv.", 0) == 0;
    });
    e.value_bytes = spec.launch.device == Device::Cuda && spec.train.precision == Precision::Bf16 ? 2 : 4;
    return e;
}

} // namespace parallax
