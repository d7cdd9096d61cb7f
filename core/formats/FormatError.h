#pragma once

#include <stdexcept>
#include <string>

namespace parallax {

// A model file that breaks its format's rules, or that cannot be read. The message names the file,
// the tensor at fault where there is one, and what is wrong: "<file>: tensor "<name>": <problem>".
class FormatError : public std::runtime_error {
public:
    FormatError(const std::string& file, const std::string& problem);
    FormatError(const std::string& file, const std::string& tensor, const std::string& problem);

    const std::string& file() const { return m_file; }
    const std::string& tensor() const { return m_tensor; } // "" when no one tensor is at fault

private:
    std::string m_file;
    std::string m_tensor;
};

// `name` in double quotes as a message shows it: control characters escaped, cut after 200 bytes (a
// hostile header may hold names of megabytes, or with line breaks).
std::string quoteName(const std::string& name);

} // namespace parallax
