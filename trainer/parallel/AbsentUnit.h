#pragma once

#include "trainer/models/Model.h"

#include <stdexcept>

namespace parallax {

// Stands in for a unit that another pipeline stage holds: no parameters here, and running it is a
// logic error. Keeps the unit indices, hence parameter names ("units.7.q.weight"), of the local
// units unchanged.
class AbsentUnit : public Unit {
public:
    explicit AbsentUnit(std::string kind) : m_kind(std::move(kind)) {}
    Activation forward(const Activation&, const Batch&) override {
        throw std::logic_error("unit '" + m_kind + "' belongs to another pipeline stage");
    }
    std::string kindName() const override { return m_kind; }

private:
    std::string m_kind;
};

} // namespace parallax
