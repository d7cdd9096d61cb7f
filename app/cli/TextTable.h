#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace parallax {

// A plain-text table with aligned columns: numbers right-aligned, text left-aligned.
class TextTable {
public:
    enum class Align { Left, Right };

    void addColumn(std::string header, Align align = Align::Left);
    void addRow(std::vector<std::string> cells);
    size_t rows() const { return m_rows.size(); }
    void print(std::ostream& out) const;

private:
    std::vector<std::string> m_headers;
    std::vector<Align> m_align;
    std::vector<std::vector<std::string>> m_rows;
};

} // namespace parallax
