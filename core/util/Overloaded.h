#pragma once

namespace parallax {

// One visitor out of several lambdas, for std::visit over a variant: each alternative goes to
// the lambda that takes it.
template <class... F>
struct Overloaded : F... {
    using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

} // namespace parallax
