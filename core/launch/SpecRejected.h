#pragma once

#include "core/spec/SpecValidator.h"

#include <stdexcept>
#include <vector>

namespace parallax {

// A spec with validation errors: nothing was created. what() is formatIssues(issues).
class SpecRejected : public std::runtime_error {
public:
    explicit SpecRejected(std::vector<SpecIssue> issues)
        : std::runtime_error(formatIssues(issues)), m_issues(std::move(issues)) {}
    const std::vector<SpecIssue>& issues() const { return m_issues; }

private:
    std::vector<SpecIssue> m_issues;
};

} // namespace parallax
