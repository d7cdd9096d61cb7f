#pragma once

#include "trainer/data/Dataset.h"

#include <string>
#include <vector>

namespace parallax {

// A text file as byte tokens (0..255) for gpt. Sample i is the window of T+1 bytes starting at
// byte i*T, so consecutive samples overlap by the one byte that is a label in the first and an
// input in the next.
class TextDataset : public Dataset {
public:
    // Throws DataError naming the file when it is missing, unreadable or shorter than T+1 bytes.
    TextDataset(const std::string& path, const ModelDims& dims);

    int64_t size() const override { return m_windows; }
    Batch makeBatch(const std::vector<int64_t>& indices, int64_t step) const override;
    std::string describe() const override;

private:
    std::string m_path;
    ModelDims m_dims;
    std::vector<uint8_t> m_bytes;
    int64_t m_windows = 0;
};

} // namespace parallax
