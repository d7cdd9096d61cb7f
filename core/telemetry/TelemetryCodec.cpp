#include "core/telemetry/TelemetryCodec.h"

#include "core/telemetry/JsonReader.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <type_traits>
#include <variant>
#include <vector>

namespace parallax {

namespace {

// ---------------------------------------------------------------- encoding

void appendEscaped(std::string& out, std::string_view s) {
    static const char* hex = "0123456789abcdef";
    out.push_back('"');
    size_t run = 0; // start of the pending run of bytes that need no escape
    for (size_t i = 0; i < s.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        out.append(s.data() + run, i - run);
        run = i + 1;
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
            out += "\\u00";
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 0xF]);
        }
    }
    out.append(s.data() + run, s.size() - run);
    out.push_back('"');
}

void appendInt(std::string& out, int64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

void appendDouble(std::string& out, double v) {
    if (std::isnan(v)) {
        out += "null";
        return;
    }
    if (std::isinf(v)) {
        out += v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
        return;
    }
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v); // shortest text that reads back exactly
    out.append(buf, r.ptr);
}

template <class E>
void appendFields(std::string& out, const E& e) {
    out += "{\"ev\":\"";
    out += E::kName;
    out += "\",\"v\":";
    appendInt(out, kTelemetryVersion);
    for (const EventField<E>& f : E::fields()) {
        if (f.storedOnly) continue;
        out += ",\"";
        out += f.name;
        out += "\":";
        if (f.i32) {
            appendInt(out, e.*f.i32);
        } else if (f.i64) {
            appendInt(out, e.*f.i64);
        } else if (f.f64) {
            appendDouble(out, e.*f.f64);
        } else if (f.str) {
            appendEscaped(out, e.*f.str);
        } else if (f.strs) {
            out.push_back('[');
            bool first = true;
            for (const std::string& s : e.*f.strs) {
                if (!first)
                    out.push_back(',');
                first = false;
                appendEscaped(out, s);
            }
            out.push_back(']');
        } else if (f.f64s) {
            out.push_back('[');
            bool first = true;
            for (double d : e.*f.f64s) {
                if (!first)
                    out.push_back(',');
                first = false;
                appendDouble(out, d);
            }
            out.push_back(']');
        } else if (f.i64s) {
            out.push_back('[');
            bool first = true;
            for (int64_t v : e.*f.i64s) {
                if (!first)
                    out.push_back(',');
                first = false;
                out += std::to_string(v);
            }
            out.push_back(']');
        }
    }
    out.push_back('}');
}

// ---------------------------------------------------------------- decoding

// A double field: a number, NaN/Infinity tokens, null (NaN) or the strings the encoder writes.
bool readDoubleValue(JsonReader& r, double& out, std::string& scratch, std::string& why) {
    const JsonReader::Type t = r.peek();
    if (t == JsonReader::Type::Number || t == JsonReader::Type::NonFinite)
        return r.readDouble(out) || (why = "is not a valid number", false);
    if (t == JsonReader::Type::Null) {
        r.skipValue();
        out = std::numeric_limits<double>::quiet_NaN();
        return true;
    }
    if (t == JsonReader::Type::String) {
        std::string_view s;
        if (!r.readStringView(s, scratch))
            return false;
        if (s == "NaN" || s == "nan") {
            out = std::numeric_limits<double>::quiet_NaN();
            return true;
        }
        if (s == "Infinity" || s == "inf") {
            out = std::numeric_limits<double>::infinity();
            return true;
        }
        if (s == "-Infinity" || s == "-inf") {
            out = -std::numeric_limits<double>::infinity();
            return true;
        }
        why = "must be a number (got a string)";
        return false;
    }
    why = std::string("must be a number (got ") + JsonReader::typeName(t) + ")";
    return false;
}

bool readIntValue(JsonReader& r, int64_t& out, int64_t lo, int64_t hi, std::string& why) {
    const JsonReader::Type t = r.peek();
    if (t != JsonReader::Type::Number) {
        why = std::string("must be an integer (got ") + JsonReader::typeName(t) + ")";
        return false;
    }
    const char* problem = nullptr;
    if (!r.readInt64(out, problem)) {
        if (problem)
            why = std::string(problem) == "a fraction" ? "must be an integer (got a fraction)" : "is out of range";
        return false;
    }
    if (out < lo || out > hi) {
        why = "is out of range";
        return false;
    }
    return true;
}

template <class E>
bool readField(JsonReader& r, const EventField<E>& f, E& e, std::string& scratch, std::string& why) {
    if (f.i32) {
        int64_t v = 0;
        if (!readIntValue(r, v, std::numeric_limits<int>::min(), std::numeric_limits<int>::max(), why))
            return false;
        e.*f.i32 = static_cast<int>(v);
        return true;
    }
    if (f.i64) {
        return readIntValue(r, e.*f.i64, std::numeric_limits<int64_t>::min(),
                            std::numeric_limits<int64_t>::max(), why);
    }
    if (f.f64)
        return readDoubleValue(r, e.*f.f64, scratch, why);
    if (f.str) {
        const JsonReader::Type t = r.peek();
        if (t != JsonReader::Type::String) {
            why = std::string("must be a string (got ") + JsonReader::typeName(t) + ")";
            return false;
        }
        return r.readString(e.*f.str);
    }
    const JsonReader::Type t = r.peek();
    if (t != JsonReader::Type::Array) {
        why = std::string("must be an array (got ") + JsonReader::typeName(t) + ")";
        return false;
    }
    r.expect('[');
    if (f.strs) {
        std::vector<std::string>& v = e.*f.strs;
        v.clear();
        if (r.accept(']'))
            return true;
        do {
            const JsonReader::Type it = r.peek();
            if (it != JsonReader::Type::String) {
                why = std::string("must be an array of strings (got ") + JsonReader::typeName(it) + " in it)";
                return false;
            }
            v.emplace_back();
            if (!r.readString(v.back()))
                return false;
        } while (r.accept(','));
        return r.expect(']');
    }
    if (f.i64s) {
        std::vector<int64_t>& v = e.*f.i64s;
        v.clear();
        if (r.accept(']'))
            return true;
        do {
            int64_t value = 0;
            if (!readIntValue(r, value, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), why)) {
                why = "must be an array of integers";
                return false;
            }
            v.push_back(value);
        } while (r.accept(','));
        return r.expect(']');
    }
    std::vector<double>& v = e.*f.f64s;
    v.clear();
    if (r.accept(']'))
        return true;
    do {
        double d = 0;
        if (!readDoubleValue(r, d, scratch, why)) {
            if (!why.empty())
                why = "must be an array of numbers";
            return false;
        }
        v.push_back(d);
    } while (r.accept(','));
    return r.expect(']');
}

void setMalformed(DecodedLine& out, std::string why) {
    out.kind = DecodedLine::Kind::Malformed;
    out.error = std::move(why);
}

// The index of the field named `key` in `fields`, trying `hint` first (the encoder writes fields in
// table order); fields.size() for a name that is none of them.
template <class E>
size_t fieldIndex(const std::vector<EventField<E>>& fields, std::string_view key, size_t hint) {
    if (hint < fields.size() && fields[hint].name == key) return hint;
    for (size_t i = 0; i < fields.size(); ++i)
        if (fields[i].name == key) return i;
    return fields.size();
}

// Reads the members of an object into the event's fields, validating as it goes. `r` stands either
// just after the opening brace (afterFirst false) or just after the first member, "ev" (afterFirst
// true). "v" is read here; "ev" was read by the caller and must not name another event.
template <class E>
void decodeMembers(JsonReader& r, bool afterFirst, DecodedLine& out) {
    // Reuse the variant's storage when the previous line was the same event type.
    if (!std::holds_alternative<E>(out.event))
        out.event.template emplace<E>();
    E& e = std::get<E>(out.event);
    e = E{};
    const std::vector<EventField<E>>& fields = E::fields();
    uint64_t seen = 0;
    bool haveVersion = false;
    size_t hint = 0; // the encoder writes fields in table order: try the next one first
    std::string keyScratch;
    std::string valueScratch;
    std::string why;
    auto badJson = [&] { setMalformed(out, "bad JSON: " + r.error()); };
    bool first = !afterFirst;
    for (;;) {
        if (r.accept('}'))
            break;
        if (!first && !r.expect(','))
            return badJson();
        first = false;
        std::string_view key;
        if (!r.readStringView(key, keyScratch) || !r.expect(':'))
            return badJson();
        const JsonReader::Type type = r.peek();
        if (type == JsonReader::Type::End || type == JsonReader::Type::Invalid) {
            r.skipValue();
            return badJson();
        }
        if (key == "v") {
            int64_t v = 0;
            if (!readIntValue(r, v, 1, std::numeric_limits<int64_t>::max(), why)) {
                if (r.failed())
                    return badJson();
                return setMalformed(out, "\"v\" must be a positive integer");
            }
            out.version = v;
            haveVersion = true;
            continue;
        }
        if (key == "ev") {
            std::string_view name;
            if (type != JsonReader::Type::String || !r.readStringView(name, valueScratch))
                return r.failed() ? badJson() : setMalformed(out, "\"ev\" must be a string");
            if (name != E::kName)
                return setMalformed(out, "\"ev\" appears twice with different events");
            continue;
        }
        const size_t index = fieldIndex(fields, key, hint);
        if (index == fields.size()) {
            if (!r.skipValue())
                return badJson();
            continue;
        }
        hint = index + 1;
        if (!readField(r, fields[index], e, valueScratch, why)) {
            if (r.failed())
                return badJson();
            return setMalformed(out, std::string(E::kName) + ": field \"" + std::string(key) + "\" " + why);
        }
        seen |= uint64_t(1) << index;
    }
    if (!r.atEnd())
        return setMalformed(out, "trailing characters after the JSON object at byte " + std::to_string(r.position()));
    if (!haveVersion)
        return setMalformed(out, "missing \"v\" (the protocol version)");
    for (size_t i = 0; i < fields.size(); ++i)
        if (fields[i].required && !(seen & (uint64_t(1) << i)))
            return setMalformed(out, std::string(E::kName) + ": missing required field \"" +
                                         std::string(fields[i].name) + "\"");
    out.kind = DecodedLine::Kind::Event;
}

// Checks that need the whole event.
void finishDecoded(DecodedLine& out) {
    if (out.kind != DecodedLine::Kind::Event)
        return;
    if (const auto* end = std::get_if<RunEndEvent>(&out.event)) {
        if (end->status != "succeeded" && end->status != "failed" && end->status != "stopped")
            setMalformed(out, "run_end: status must be succeeded, failed or stopped (got \"" + end->status.substr(0, 40) +
                                  "\")");
    }
}

// Dispatches on the event name; false when no event has it.
template <size_t I = 0>
bool decodeNamed(std::string_view ev, JsonReader& r, bool afterFirst, DecodedLine& out) {
    if constexpr (I < std::variant_size_v<TelemetryEvent>) {
        using E = std::variant_alternative_t<I, TelemetryEvent>;
        if (ev != E::kName) return decodeNamed<I + 1>(ev, r, afterFirst, out);
        decodeMembers<E>(r, afterFirst, out);
        return true;
    } else {
        return false;
    }
}

} // namespace

void appendEvent(std::string& out, const TelemetryEvent& event) {
    out += kTelemetryPrefix;
    std::visit([&](const auto& e) { appendFields(out, e); }, event);
}

std::string encodeEvent(const TelemetryEvent& event) {
    std::string out;
    out.reserve(256);
    appendEvent(out, event);
    return out;
}

std::string_view eventName(const TelemetryEvent& event) {
    return std::visit([](const auto& e) { return std::decay_t<decltype(e)>::kName; }, event);
}

DecodedLine decodeLine(std::string_view line) {
    DecodedLine out;
    decodeLine(line, out);
    return out;
}

void decodeLine(std::string_view line, DecodedLine& out) {
    out.error.clear();
    out.version = 0;
    if (line.substr(0, kTelemetryPrefix.size()) != kTelemetryPrefix) {
        out.kind = DecodedLine::Kind::Text;
        return;
    }
    const std::string_view body = line.substr(kTelemetryPrefix.size());
    JsonReader r(body);
    if (r.peek() != JsonReader::Type::Object)
        return setMalformed(out, r.atEnd() ? "nothing after the prefix" : "expected a JSON object after the prefix");
    r.expect('{');

    // One pass when "ev" comes first, as the encoder writes it.
    {
        JsonReader fast = r;
        std::string scratch;
        std::string_view key;
        std::string_view ev;
        std::string evScratch;
        if (fast.readStringView(key, scratch) && key == "ev" && fast.expect(':') &&
            fast.peek() == JsonReader::Type::String && fast.readStringView(ev, evScratch) &&
            decodeNamed(ev, fast, true, out)) {
            finishDecoded(out);
            return;
        }
    }

    // Otherwise a first pass finds "ev" anywhere in a valid object, and a second reads the fields.
    const size_t membersBegin = r.position();
    std::string keyScratch;
    std::string evScratch;
    std::string ev;
    bool haveEv = false;
    std::string evWhy;
    if (!r.accept('}')) {
        do {
            std::string_view key;
            if (!r.readStringView(key, keyScratch) || !r.expect(':'))
                return setMalformed(out, "bad JSON: " + r.error());
            if (key == "ev") {
                if (r.peek() == JsonReader::Type::String) {
                    std::string_view value;
                    if (!r.readStringView(value, evScratch))
                        return setMalformed(out, "bad JSON: " + r.error());
                    ev.assign(value.data(), value.size());
                    haveEv = true;
                    evWhy.clear();
                    continue;
                }
                evWhy = std::string("\"ev\" must be a string (got ") + JsonReader::typeName(r.peek()) + ")";
            }
            if (!r.skipValue())
                return setMalformed(out, "bad JSON: " + r.error());
        } while (r.accept(','));
        if (!r.expect('}'))
            return setMalformed(out, "bad JSON: " + r.error());
    }
    if (!r.atEnd())
        return setMalformed(out, "trailing characters after the JSON object at byte " + std::to_string(r.position()));
    if (!evWhy.empty())
        return setMalformed(out, evWhy);
    if (!haveEv)
        return setMalformed(out, "missing \"ev\" (the event name)");
    JsonReader second(body, membersBegin);
    if (!decodeNamed(ev, second, false, out))
        return setMalformed(out, "unknown event \"" + ev.substr(0, 40) + "\"");
    finishDecoded(out);
}

} // namespace parallax
