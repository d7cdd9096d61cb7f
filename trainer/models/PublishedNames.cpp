#include "trainer/models/PublishedNames.h"

#include <stdexcept>

namespace parallax {

std::vector<std::pair<std::string, torch::Tensor>> publishedParameters(const Model& model) {
    std::vector<std::pair<std::string, torch::Tensor>> out;
    for (int64_t i = 0; i < model.unitCount(); ++i) {
        const std::shared_ptr<Unit> unit = model.unit(i);
        for (const auto& item : unit->named_parameters()) {
            std::string name = unit->publishedName(item.key());
            if (name.empty())
                throw std::invalid_argument("unit " + std::to_string(i) + " (" + unit->kindName() + ") of model.kind = \"" +
                                            choiceName(model.dims().kind) + "\" has no published form");
            out.emplace_back(std::move(name), item.value());
        }
    }
    return out;
}

} // namespace parallax
