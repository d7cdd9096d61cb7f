#include "tests/core/text/Qwen2TokenizerFolder.h"

#include "core/util/Files.h"

namespace parallax::testing {

void writeQwen2TokenizerFolder(const nlohmann::json& tokenizerJson, const std::string& folder) {
    createDirectories(folder);
    const nlohmann::json& model = tokenizerJson.at("model");
    writeFileAtomic(joinPath(folder, "vocab.json"), model.at("vocab").dump());
    std::string merges = "#version: 0.2\n";
    for (const nlohmann::json& m : model.at("merges"))
        merges += (m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>()) + "\n";
    writeFileAtomic(joinPath(folder, "merges.txt"), merges);
    nlohmann::json decoder = nlohmann::json::object();
    bool endOfText = false;
    for (const nlohmann::json& t : tokenizerJson.value("added_tokens", nlohmann::json::array())) {
        nlohmann::json entry = t;
        entry.erase("id");
        decoder[std::to_string(t.at("id").get<int64_t>())] = entry;
        endOfText = endOfText || t.at("content") == "<|endoftext|>";
    }
    nlohmann::json config = {{"tokenizer_class", "Qwen2Tokenizer"}, {"add_prefix_space", false}, {"errors", "replace"},
                             {"bos_token", nullptr}, {"unk_token", nullptr}, {"added_tokens_decoder", decoder}};
    if (endOfText)
        config["eos_token"] = config["pad_token"] = "<|endoftext|>";
    writeFileAtomic(joinPath(folder, "tokenizer_config.json"), config.dump(2));
}

} // namespace parallax::testing
