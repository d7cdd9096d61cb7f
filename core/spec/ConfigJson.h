#pragma once

// A model folder's JSON config files as the readers of core/spec take them apart (config.json of a
// transformers model, of a diffusers model or of its VAE): read with limits, and every field fetched
// through one reader whose messages name the file and the key.

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace parallax::configjson {

using Json = nlohmann::json;

// The value of the text of an unexpected value, for messages: "\"abc\"", "2.5", "an object".
std::string shown(const Json& value);

// FOLDER's config file at PATH as a JSON object. Throws std::invalid_argument naming the file: a
// folder or file that is missing or unreadable, larger than any config, not JSON, nested deeper than
// any config is, or not an object.
Json parseConfig(const std::string& folder, const std::string& path);

// The fields of one config: the language model's under text_config when it has one, the tower's
// under vision_config.
class ConfigReader {
public:
    ConfigReader(const Json& top, std::string path) : m_top(top), m_path(std::move(path)) {
        const auto text = top.find("text_config");
        if (text != top.end() && text->is_object()) m_text = &*text;
    }

    const std::string& path() const { return m_path; }

    // A key of the language model: text_config's, else the top level's; null when neither has it
    // (or it is null).
    const Json* text(const std::string& key) const {
        if (m_text) {
            const auto it = m_text->find(key);
            if (it != m_text->end() && !it->is_null()) return &*it;
        }
        return in(m_top, key);
    }
    const Json* in(const Json& object, const std::string& key) const {
        const auto it = object.find(key);
        return it != object.end() && !it->is_null() ? &*it : nullptr;
    }
    std::string where(const std::string& key, const std::string& section) const {
        return m_path + ": \"" + (section.empty() ? "" : section + ".") + key + "\"";
    }

    // A positive whole number at `value`; `key` names it in messages.
    int64_t count(const Json& value, const std::string& key, const std::string& section = "") const {
        if (value.is_number_integer() || value.is_number_unsigned()) {
            if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(INT64_MAX))
                throw std::invalid_argument(where(key, section) + " = " + shown(value) + " is too large");
            const int64_t n = value.get<int64_t>();
            if (n < 1) throw std::invalid_argument(where(key, section) + " = " + shown(value) + " must be at least 1");
            return n;
        }
        if (value.is_number_float()) {
            const double v = value.get<double>();
            if (std::isfinite(v) && v >= 1 && v < 9.0e15 && std::floor(v) == v) return static_cast<int64_t>(v);
        }
        throw std::invalid_argument(where(key, section) + " is " + shown(value) + ", not a positive whole number");
    }
    int64_t textCount(const std::string& key) const {
        const Json* v = text(key);
        if (!v) throw std::invalid_argument(where(key, "") + " is missing; the model's sizes come from it");
        return count(*v, key);
    }
    int64_t textCount(const std::string& key, int64_t fallback) const {
        const Json* v = text(key);
        return v ? count(*v, key) : fallback;
    }
    double number(const Json* value, const std::string& key, double fallback) const {
        if (!value) return fallback;
        if (!value->is_number() || !std::isfinite(value->get<double>()) || value->get<double>() <= 0)
            throw std::invalid_argument(where(key, "") + " is " + shown(*value) + ", not a positive number");
        return value->get<double>();
    }
    bool flag(const std::string& key, bool fallback) const {
        const Json* v = text(key);
        if (!v) return fallback;
        if (!v->is_boolean()) throw std::invalid_argument(where(key, "") + " is " + shown(*v) + ", not true or false");
        return v->get<bool>();
    }
    // A token id: a whole number, or the first of a list of them (eos_token_id may be either).
    int64_t token(const std::string& key, int64_t fallback) const {
        const Json* v = text(key);
        if (!v) return fallback;
        const Json& first = v->is_array() && !v->empty() ? v->front() : *v;
        if (first.is_number_integer() && first.get<int64_t>() >= 0) return first.get<int64_t>();
        throw std::invalid_argument(where(key, "") + " is " + shown(*v) + ", not a token id");
    }

    const Json& top() const { return m_top; }

private:
    const Json& m_top;
    const Json* m_text = nullptr;
    std::string m_path;
};

} // namespace parallax::configjson
