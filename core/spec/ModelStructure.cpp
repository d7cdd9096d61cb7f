#include "core/spec/ModelStructure.h"

#include "core/spec/CheckedMath.h"

#include <stdexcept>

namespace parallax {

namespace {

[[noreturn]] void tooLarge() {
    throw std::invalid_argument("model: the parameter count does not fit in 64 bits; use smaller model dimensions");
}

int64_t product(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) {
        const std::optional<int64_t> next = checkedMul(n, d);
        if (!next) tooLarge();
        n = *next;
    }
    return n;
}

void addTo(int64_t& total, int64_t n) {
    const std::optional<int64_t> sum = checkedAdd(total, n);
    if (!sum) tooLarge();
    total = *sum;
}

} // namespace

void ModelStructure::tensor(const std::string& name, std::vector<int64_t> shape, TensorSplit split, bool adaptable) {
    UnitEstimate& u = units.back();
    addTo(split == TensorSplit::Replicated ? u.replicated : u.split, product(shape));
    const ModelPart part = partOf ? partOf(name) : ModelPart::Language;
    tensors.push_back({name, std::move(shape), static_cast<int>(units.size()) - 1, part, split, adaptable, {}});
}

void ModelStructure::tiedCopy(const std::string& name, const std::string& source, std::vector<int64_t> shape,
                              TensorSplit split) {
    tensor(name, std::move(shape), split);
    tensors.back().tiedTo = source;
}

void ModelStructure::linear(const std::string& module, int64_t in, int64_t out, bool bias, TensorSplit split) {
    tensor(module + ".weight", {out, in}, split, true);
    if (bias) tensor(module + ".bias", {out}, split == TensorSplit::Row ? TensorSplit::Replicated : split);
}

} // namespace parallax
