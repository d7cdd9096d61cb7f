#include "trainer/data/TokenizedTextDataset.h"

#include "core/text/Tokenizer.h"
#include "core/text/TokenizerError.h"
#include "core/util/Files.h"
#include "trainer/data/DataError.h"
#include "trainer/data/DatasetUtils.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>

namespace parallax {

namespace {

bool hasExtension(const std::string& path, const std::string& extension) {
    return path.size() > extension.size() && path.compare(path.size() - extension.size(), extension.size(), extension) == 0;
}

// The .txt and .jsonl files of data.path, in name order.
std::vector<std::string> documentFiles(const std::string& path) {
    if (path.empty()) throw DataError("data.path is empty; data.kind = \"text\" needs a .txt or .jsonl file or a folder");
    if (isRegularFile(path)) return {path};
    if (!isDirectory(path))
        throw DataError("data.path = " + path + ": not found; set it to a .txt or .jsonl file or a folder of them");
    std::vector<std::string> files;
    try {
        for (const std::string& name : listDirectory(path)) {
            const std::string file = joinPath(path, name);
            if ((hasExtension(name, ".txt") || hasExtension(name, ".jsonl")) && isRegularFile(file)) files.push_back(file);
        }
    } catch (const FileError& e) {
        throw DataError("data.path = " + path + ": " + e.what());
    }
    if (files.empty()) throw DataError("data.path = " + path + ": holds no .txt or .jsonl file");
    return files;
}

std::string readWhole(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw DataError(file + ": cannot be opened for reading");
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

} // namespace

TokenizedTextDataset::TokenizedTextDataset(const DataSpec& data, const ModelDims& dims, const std::string& modelFolder)
    : m_path(data.path), m_dims(dims) {
    requireTextModel(dims);
    Tokenizer tokenizer = [&] {
        try {
            return Tokenizer::load(modelFolder);
        } catch (const TokenizerError& e) {
            throw DataError(std::string("model.from: data.kind = \"text\" tokenizes with the model's tokenizer.json: ") +
                            e.what());
        }
    }();
    if (tokenizer.idCount() > dims.vocab)
        throw DataError(tokenizer.source() + " has ids up to " + std::to_string(tokenizer.idCount() - 1) +
                        ", but the model's vocabulary holds " + std::to_string(dims.vocab) + " (vocab_size)");
    const std::optional<int32_t> eos = tokenizer.tokenId("<|endoftext|>");
    if (!eos)
        throw DataError(tokenizer.source() + " has no <|endoftext|> token to put between documents");
    auto document = [&](std::string_view text) {
        tokenizer.encode(text, m_tokens, nullptr);
        m_tokens.push_back(*eos);
        ++m_documents;
    };
    for (const std::string& file : documentFiles(data.path)) {
        ++m_files;
        if (!hasExtension(file, ".jsonl")) {
            document(readWhole(file));
            continue;
        }
        std::ifstream lines(file, std::ios::binary);
        if (!lines) throw DataError(file + ": cannot be opened for reading");
        int64_t number = 0;
        for (std::string line; std::getline(lines, line);) {
            ++number;
            if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
            const nlohmann::json row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
            if (row.is_object() && row.contains("text") && row["text"].is_string()) {
                document(row["text"].get_ref<const std::string&>());
                continue;
            }
            if (data.on_bad_sample == OnBadSample::Skip) {
                ++m_skipped;
                continue;
            }
            throw DataError(file + ":" + std::to_string(number) + ": " +
                            (row.is_discarded() ? std::string("not JSON") : std::string("no \"text\" string")) +
                            "; each line of a .jsonl is an object with a \"text\" field (or set data.on_bad_sample = "
                            "\"skip\" to skip such lines)");
        }
    }
    const int64_t n = static_cast<int64_t>(m_tokens.size());
    const int64_t t = dims.seq_len;
    if (n < t + 1)
        throw DataError("data.path = " + data.path + ": " + std::to_string(m_documents) + " document(s) give " +
                        std::to_string(n) + " tokens, but one sample needs model.seq_len + 1 = " + std::to_string(t + 1) +
                        "; use more text or a smaller model.seq_len");
    m_windows = (n - 1) / t;
}

Batch TokenizedTextDataset::makeBatch(const std::vector<int64_t>& indices, int64_t /*step*/) const {
    requireIndices(indices, size(), m_path);
    return streamWindows(m_tokens, m_dims.seq_len, indices);
}

std::string TokenizedTextDataset::describe() const {
    return "text: " + std::to_string(m_windows) + " windows of " + std::to_string(m_dims.seq_len + 1) + " tokens from " +
           std::to_string(m_documents) + " document(s) in " + std::to_string(m_files) + " file(s) at " + m_path + " (" +
           std::to_string(m_tokens.size()) + " tokens" +
           (m_skipped ? ", " + std::to_string(m_skipped) + " line(s) skipped" : std::string()) + ")";
}

} // namespace parallax
