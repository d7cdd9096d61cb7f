#pragma once

#include "core/store/StoreConnection.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parallax {

// What a person writes on a run: its tags and notes, kept in its row of the runs table and searched
// with it (RunFilter::text).
class RunAnnotations {
public:
    explicit RunAnnotations(StoreConnection& connection) : m_c(connection) {}

    void setTags(int64_t id, const std::vector<std::string>& tags);
    void setNotes(int64_t id, const std::string& notes);

private:
    StoreConnection& m_c;
};

} // namespace parallax
