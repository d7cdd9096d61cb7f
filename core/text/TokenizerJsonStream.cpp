#include "core/text/TokenizerJsonStream.h"

namespace parallax {

namespace {

using Json = nlohmann::json;

// The SAX events of nlohmann/json: a tree built as json_sax_dom_parser builds it, except inside
// model.vocab and model.merges, whose entries go to the stream's containers.
class Handler : public nlohmann::json_sax<Json> {
public:
    explicit Handler(TokenizerJsonStream& out) : m_out(out) {}

    bool null() override { return value(nullptr, "null"); }
    bool boolean(bool v) override { return value(v, "a boolean"); }
    bool number_integer(number_integer_t v) override { return id(v) || value(v, "a number"); }
    bool number_unsigned(number_unsigned_t v) override {
        return id(v > static_cast<number_unsigned_t>(INT64_MAX) ? -1 : static_cast<int64_t>(v)) || value(v, "a number");
    }
    bool number_float(number_float_t v, const string_t&) override { return value(v, "a number"); }
    bool binary(binary_t&) override { return fail("binary data"); }
    bool string(string_t& v) override {
        if (m_mode == Mode::Merges)
            return mergeLine(v);
        if (m_mode == Mode::Pair) {
            if (m_pair.size() == 2)
                return fail(mergePath() + " must be a pair of strings");
            m_pair.push_back(std::move(v));
            return true;
        }
        return value(std::move(v), "a string");
    }
    bool key(string_t& k) override {
        m_key = std::move(k);
        return true;
    }
    bool start_object(std::size_t) override {
        if (m_mode != Mode::Tree)
            return fail(m_mode == Mode::Vocab ? "model.vocab[\"" + m_key + "\"] must be an id, not an object"
                                              : mergePath() + " must be a string or a pair of strings");
        if (atModel("vocab")) {
            m_mode = Mode::Vocab;
            m_out.hasVocab = true;
            return true;
        }
        return open(Json::object());
    }
    bool end_object() override {
        if (m_mode == Mode::Vocab) {
            m_mode = Mode::Tree;
            return true;
        }
        m_stack.pop_back();
        return true;
    }
    bool start_array(std::size_t) override {
        if (m_mode == Mode::Merges) {
            m_mode = Mode::Pair;
            m_pair.clear();
            return true;
        }
        if (m_mode != Mode::Tree)
            return fail(m_mode == Mode::Vocab ? "model.vocab[\"" + m_key + "\"] must be an id, not an array"
                                              : mergePath() + " must be a pair of strings");
        if (atModel("merges")) {
            m_mode = Mode::Merges;
            m_out.hasMerges = true;
            return true;
        }
        return open(Json::array());
    }
    bool end_array() override {
        if (m_mode == Mode::Pair) {
            if (m_pair.size() != 2)
                return fail(mergePath() + " must be a pair of strings");
            m_out.merges.emplace_back(std::move(m_pair[0]), std::move(m_pair[1]));
            m_mode = Mode::Merges;
            return true;
        }
        if (m_mode == Mode::Merges) {
            m_mode = Mode::Tree;
            return true;
        }
        m_stack.pop_back();
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
        return fail(std::string("not valid JSON (") + e.what() + "); is the file cut short or not a tokenizer.json?");
    }

private:
    enum class Mode { Tree, Vocab, Merges, Pair };

    bool fail(const std::string& what) {
        if (m_out.error.empty())
            m_out.error = what;
        return false;
    }
    // Directly inside the top-level "model" object, at member `name`.
    bool atModel(const char* name) const {
        return m_stack.size() == 2 && m_key == name && m_stack[0]->is_object() && m_stack[1]->is_object() &&
               m_stack[0]->contains("model") && &(*m_stack[0])["model"] == m_stack[1];
    }
    std::string mergePath() const { return "model.merges[" + std::to_string(m_out.merges.size()) + "]"; }

    // An integer inside model.vocab: its id.
    bool id(int64_t v) {
        if (m_mode != Mode::Vocab)
            return false;
        m_out.vocab.emplace_back(std::move(m_key), v);
        return true;
    }
    bool mergeLine(std::string& line) {
        if (line.rfind("#version", 0) == 0)
            return true;
        const size_t space = line.find(' ');
        if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
            return fail(mergePath() + " \"" + line + "\" must be two tokens separated by one space");
        m_out.merges.emplace_back(line.substr(0, space), line.substr(space + 1));
        return true;
    }
    template <typename V>
    bool value(V&& v, const char* what) {
        if (m_mode == Mode::Vocab)
            return fail("model.vocab[\"" + m_key + "\"] must be an id, not " + what);
        if (m_mode != Mode::Tree)
            return fail(mergePath() + " must be a string or a pair of strings, not " + what);
        place(Json(std::forward<V>(v)));
        return true;
    }
    Json* place(Json v) {
        if (m_stack.empty()) {
            m_out.tree = std::move(v);
            return &m_out.tree;
        }
        Json& top = *m_stack.back();
        if (top.is_array()) {
            top.push_back(std::move(v));
            return &top.back();
        }
        Json& slot = top[m_key];
        slot = std::move(v);
        return &slot;
    }
    bool open(Json container) {
        m_stack.push_back(place(std::move(container)));
        return true;
    }

    TokenizerJsonStream& m_out;
    std::vector<Json*> m_stack;
    std::string m_key;
    Mode m_mode = Mode::Tree;
    std::vector<std::string> m_pair;
};

} // namespace

bool TokenizerJsonStream::parse(const std::string& text) {
    Handler handler(*this);
    const bool ok = Json::sax_parse(text, &handler);
    if (!ok && error.empty())
        error = "not valid JSON";
    return ok && error.empty();
}

} // namespace parallax
