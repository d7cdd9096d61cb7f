#include "trainer/data/TextDataset.h"

#include "trainer/data/DataError.h"
#include "trainer/data/DatasetUtils.h"

#include <fstream>
#include <iterator>

namespace parallax {

TextDataset::TextDataset(const std::string& path, const ModelDims& dims) : m_path(path), m_dims(dims) {
    requireTextModel(dims);
    requireByteVocab(dims, "text");
    if (path.empty()) throw DataError("data.path is empty; data.kind = \"text\" needs a text file");
    if (!isRegularFile(path))
        throw DataError(path + ": not found or not a file; set data.path to a text file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw DataError(path + ": cannot be opened for reading");
    m_bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    const int64_t n = static_cast<int64_t>(m_bytes.size());
    const int64_t t = dims.seq_len;
    if (n < t + 1)
        throw DataError(path + ": has " + std::to_string(n) + " bytes, but one sample needs model.seq_len + 1 = " +
                        std::to_string(t + 1) + "; use a longer file or a smaller model.seq_len");
    m_windows = (n - 1) / t;
}

Batch TextDataset::makeBatch(const std::vector<int64_t>& indices, int64_t /*step*/) const {
    requireIndices(indices, size(), m_path);
    return streamWindows(m_bytes, m_dims.seq_len, indices);
}

std::string TextDataset::describe() const {
    return "text: " + std::to_string(m_windows) + " windows of " + std::to_string(m_dims.seq_len + 1) + " bytes from " +
           m_path + " (" + std::to_string(m_bytes.size()) + " bytes)";
}

} // namespace parallax
