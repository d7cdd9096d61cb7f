#pragma once

#include "core/store/StoreConnection.h"

#include <cstdint>
#include <optional>
#include <string>

namespace parallax {

// The store as a whole: its identity and small settings (store_info), its schema version, whether
// another connection committed since (data_version), and whether its file is intact (see RunStore
// for each call).
class StoreInfo {
public:
    explicit StoreInfo(StoreConnection& connection);

    std::string storeId() const;
    std::optional<std::string> storeInfo(const std::string& key) const;
    void setStoreInfo(const std::string& key, const std::string& value);
    int schemaVersion() const;
    int64_t dataVersion() const;
    void requireIntact() const;

private:
    StoreConnection& m_c;
    // Polled by every reader several times a second.
    mutable SqlStatement m_dataVersion, m_userVersion;
};

} // namespace parallax
