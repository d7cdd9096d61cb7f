#include "core/store/RunAnnotations.h"

#include "core/store/JsonLists.h"

namespace parallax {

void RunAnnotations::setTags(int64_t id, const std::vector<std::string>& tags) {
    m_c.execute("UPDATE runs SET tags = ?2 WHERE id = ?1", {id, json_lists::text(tags)});
    m_c.requireChanged(id, "setTags");
}

void RunAnnotations::setNotes(int64_t id, const std::string& notes) {
    m_c.execute("UPDATE runs SET notes = ?2 WHERE id = ?1", {id, notes});
    m_c.requireChanged(id, "setNotes");
}

} // namespace parallax
