#pragma once

#include "core/spec/RunSpec.h"
#include "trainer/data/Dataset.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// Text documents through the model's tokenizer (model.from's tokenizer.json) for a published
// language model: data.kind = "text" with a model folder. Every document is tokenized and followed by
// <|endoftext|>, the documents packed into one stream in order, and sample i is the window of T+1
// tokens starting at token i*T (as TextDataset's byte windows: consecutive samples share one token).
// data.path: a .txt file (one document), a .jsonl file (one JSON object per line, its "text" string
// one document; blank lines are skipped), or a folder of them (read in name order, not recursively).
// A .jsonl line that is not such an object fails the run naming the file and line, or with
// data.on_bad_sample = "skip" is skipped and counted. The whole corpus is tokenized when the
// dataset is made (about 10 MB of text a second per rank).
class TokenizedTextDataset : public Dataset {
public:
    // Throws DataError naming the field, file or line: no tokenizer.json, a tokenizer whose ids pass
    // model.vocab or that has no <|endoftext|>, no documents, fewer than T+1 tokens.
    TokenizedTextDataset(const DataSpec& data, const ModelDims& dims, const std::string& modelFolder);

    int64_t size() const override { return m_windows; }
    Batch makeBatch(const std::vector<int64_t>& indices, int64_t step) const override;
    std::string describe() const override;

    const std::vector<int32_t>& tokens() const { return m_tokens; }
    int64_t documents() const { return m_documents; }
    int64_t skipped() const { return m_skipped; }

private:
    std::string m_path;
    ModelDims m_dims;
    std::vector<int32_t> m_tokens;
    int64_t m_windows = 0;
    int64_t m_documents = 0;
    int64_t m_files = 0;
    int64_t m_skipped = 0;
};

} // namespace parallax
