#include "core/store/StoreInfo.h"

#include "core/store/StoreHealth.h"
#include "core/store/StoreTypes.h"

#include <vector>

namespace parallax {

StoreInfo::StoreInfo(StoreConnection& connection)
    : m_c(connection), m_dataVersion(connection.prepare("PRAGMA data_version")),
      m_userVersion(connection.prepare("PRAGMA user_version")) {}

std::string StoreInfo::storeId() const { return storeInfo("id").value_or(std::string()); }

std::optional<std::string> StoreInfo::storeInfo(const std::string& key) const {
    SqlStatement& s = m_c.get("SELECT value FROM store_info WHERE key = ?1");
    SqlStatement::Use use(s);
    s.bind(1, key);
    if (!s.step()) return std::nullopt;
    return s.text(0);
}

void StoreInfo::setStoreInfo(const std::string& key, const std::string& value) {
    m_c.execute("INSERT OR REPLACE INTO store_info (key, value) VALUES (?1, ?2)", {key, value});
}

int StoreInfo::schemaVersion() const {
    SqlStatement::Use use(m_userVersion);
    return m_userVersion.step() ? static_cast<int>(m_userVersion.int64(0)) : 0;
}

int64_t StoreInfo::dataVersion() const {
    SqlStatement::Use use(m_dataVersion);
    return m_dataVersion.step() ? m_dataVersion.int64(0) : 0;
}

void StoreInfo::requireIntact() const {
    const std::vector<std::string> problems = quickCheck(m_c.db(), m_c.path());
    if (problems.empty()) return;
    std::string said;
    for (const std::string& p : problems) said += (said.empty() ? "" : "; ") + p;
    throw StoreDamaged("store " + m_c.path() + " is damaged (PRAGMA quick_check: " + said +
                       "): " + damagedStoreHint(m_c.path()));
}

} // namespace parallax
