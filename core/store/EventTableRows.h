#pragma once

#include "core/telemetry/Events.h"

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

namespace parallax {

namespace detail {
template <class Variant>
struct TableRowsOf;
template <class... Es>
struct TableRowsOf<std::variant<Es...>> {
    using type = decltype(std::tuple_cat(
        std::declval<std::conditional_t<hasEventTable<Es>, std::tuple<std::vector<Es>>, std::tuple<>>>()...));
};
} // namespace detail

// Rows of the events kept in generated tables (EventTables.h) waiting to be written, one list per
// event: written a list at a time, each through statements of many rows, and none held as a
// TelemetryEvent, which is as large as the largest event.
class EventTableRows {
public:
    template <class E>
    void add(const E& e) {
        static_assert(hasEventTable<E>, "the event has no generated table");
        std::get<std::vector<E>>(m_rows).push_back(e);
    }
    // Calls fn(rows) with each event's list, empty ones included.
    template <class Fn>
    void forEach(Fn&& fn) const {
        std::apply([&](const auto&... rows) { (fn(rows), ...); }, m_rows);
    }
    void clear() {
        std::apply([](auto&... rows) { (rows.clear(), ...); }, m_rows);
    }

private:
    typename detail::TableRowsOf<TelemetryEvent>::type m_rows;
};

} // namespace parallax
