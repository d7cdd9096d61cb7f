#pragma once

#include "core/spec/ClusterProfile.h"

#include <QAbstractTableModel>
#include <QString>
#include <QStringList>

#include <optional>
#include <vector>

namespace parallax {

// The cluster profiles in the profile folders (clusterProfileFolders(): $PARALLAX_CLUSTERS, then
// ~/.config/parallax/clusters), in the order launch.cluster looks for them: each file with the
// folder it came from and the profile as read, or readClusterProfile's error for a file that
// cannot be read (listed all the same, so that the mistake can be seen and fixed). With
// setShowsThisMachine, a fixed first entry stands for this machine (launch.target = "local"): no
// file, no profile; its path is thisMachinePath().
class ClusterProfileListModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { NameColumn, HostsColumn, FolderColumn, ColumnCount };
    enum Role { PathRole = Qt::UserRole + 1, ReferenceRole, ErrorRole };

    struct Entry {
        QString path;
        QString folder;
        std::optional<ClusterProfile> profile;
        QString error;      // why it cannot be read; empty when `profile` is set
        QString shadowedBy; // an earlier file of the same name, which launch.cluster = "<name>" finds
        bool thisMachine = false; // the fixed entry of this machine, not a file
        // The file's name without .toml: what launch.cluster names.
        QString name() const;
        // What launch.cluster should say to mean this file: its name, or its path when an earlier
        // folder has a file of the same name.
        QString reference() const { return shadowedBy.isEmpty() ? name() : path; }
    };

    explicit ClusterProfileListModel(QObject* parent = nullptr);

    // The path of the entry of this machine, which names no file.
    static QString thisMachinePath();
    // Lists this machine first (from the next reload()).
    void setShowsThisMachine(bool shows) { m_showsThisMachine = shows; }

    // Reads the folders and every profile in them again.
    void reload();
    // The profiles as the folders hold them now (reading each file).
    static std::vector<Entry> scan();

    const std::vector<Entry>& entries() const { return m_entries; }
    const Entry* entry(int row) const;
    int rowOf(const QString& path) const; // -1 when not listed
    QStringList folders() const { return m_folders; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<Entry> m_entries;
    QStringList m_folders;
    bool m_showsThisMachine = false;
};

} // namespace parallax
