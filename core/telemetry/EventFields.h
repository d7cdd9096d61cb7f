#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace parallax {

// One member of a telemetry event struct, as the codec and the store see it. Exactly one pointer is
// set. Each event lists its members once (E::fields() in Events.h): the JSON line is written and
// read from that list, and so is the store table of an event that has one generated (E::table()),
// so a key cannot drift from the member it names.
template <class E>
struct EventField {
    std::string_view name;
    bool required = false; // a line without it is malformed
    bool storedOnly = false; // the store's, never on a telemetry line (storedField)
    int E::*i32 = nullptr;
    int64_t E::*i64 = nullptr;
    double E::*f64 = nullptr;
    std::string E::*str = nullptr;
    std::vector<std::string> E::*strs = nullptr;
    std::vector<double> E::*f64s = nullptr;
    std::vector<int64_t> E::*i64s = nullptr;

    bool isList() const { return strs || f64s || i64s; }
};

inline constexpr bool kRequired = true;

template <class E, class M>
EventField<E> eventField(std::string_view name, M E::*member, bool required = false) {
    EventField<E> f;
    f.name = name;
    f.required = required;
    if constexpr (std::is_same_v<M, int>) f.i32 = member;
    else if constexpr (std::is_same_v<M, int64_t>) f.i64 = member;
    else if constexpr (std::is_same_v<M, double>) f.f64 = member;
    else if constexpr (std::is_same_v<M, std::string>) f.str = member;
    else if constexpr (std::is_same_v<M, std::vector<std::string>>) f.strs = member;
    else if constexpr (std::is_same_v<M, std::vector<double>>) f.f64s = member;
    else {
        static_assert(std::is_same_v<M, std::vector<int64_t>>, "an event member of a type the codec cannot write");
        f.i64s = member;
    }
    return f;
}

// A member the store keeps and a rank never sends: the encoder leaves it out of the line.
template <class E, class M>
EventField<E> storedField(std::string_view name, M E::*member) {
    EventField<E> f = eventField(name, member);
    f.storedOnly = true;
    return f;
}

// Where the store keeps the rows of an event that has no table shaped of its own: a table named
// `name`, one column per field, generated when a store is opened, whose rows are identified within a
// run by the `key` fields (a row with the key of an earlier one replaces it) and read back in key
// order. A list field is kept only where `listsAsJson` says so, as a JSON array in a TEXT column:
// SQL can neither key, compare nor sum such a column.
struct EventTable {
    std::string_view name;
    std::vector<std::string_view> key;
    bool listsAsJson = false;
};

// Whether E declares `static EventTable table()`.
template <class E, class = void>
struct HasEventTable : std::false_type {};
template <class E>
struct HasEventTable<E, std::void_t<decltype(E::table())>> : std::true_type {};
template <class E>
inline constexpr bool hasEventTable = HasEventTable<E>::value;

} // namespace parallax
