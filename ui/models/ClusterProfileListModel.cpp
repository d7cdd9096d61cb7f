#include "ui/models/ClusterProfileListModel.h"
#include "ui/models/LocalMachineSummary.h"

#include <QColor>
#include <QDir>
#include <QFileInfo>

#include <algorithm>

namespace parallax {

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

} // namespace

QString ClusterProfileListModel::thisMachinePath() {
    return QStringLiteral("local:this-machine");
}

QString ClusterProfileListModel::Entry::name() const {
    if (thisMachine) return LocalMachine::title();
    const QString file = QFileInfo(path).fileName();
    return file.endsWith(QLatin1String(".toml")) ? file.chopped(5) : file;
}

ClusterProfileListModel::ClusterProfileListModel(QObject* parent) : QAbstractTableModel(parent) {}

std::vector<ClusterProfileListModel::Entry> ClusterProfileListModel::scan() {
    const std::vector<std::string> folders = clusterProfileFolders();
    std::vector<Entry> out;
    for (const std::string& file : clusterProfileFiles()) {
        Entry e;
        e.path = q(file);
        if (std::any_of(out.begin(), out.end(), [&](const Entry& o) { return o.path == e.path; })) continue;
        for (const std::string& folder : folders) {
            if (file.size() > folder.size() && file.compare(0, folder.size(), folder) == 0 && file[folder.size()] == '/') {
                e.folder = q(folder);
                break;
            }
        }
        if (e.folder.isEmpty()) e.folder = QFileInfo(e.path).absolutePath();
        try {
            e.profile = readClusterProfile(file);
        } catch (const std::exception& error) {
            e.error = q(error.what());
        }
        for (const Entry& earlier : out) {
            if (earlier.name() == e.name()) {
                e.shadowedBy = earlier.path;
                break;
            }
        }
        out.push_back(std::move(e));
    }
    return out;
}

void ClusterProfileListModel::reload() {
    beginResetModel();
    m_entries.clear();
    if (m_showsThisMachine) {
        Entry local;
        local.path = thisMachinePath();
        local.thisMachine = true;
        m_entries.push_back(std::move(local));
    }
    for (Entry& e : scan()) m_entries.push_back(std::move(e));
    m_folders.clear();
    for (const std::string& folder : clusterProfileFolders()) m_folders << q(folder);
    endResetModel();
}

const ClusterProfileListModel::Entry* ClusterProfileListModel::entry(int row) const {
    if (row < 0 || row >= rowCount()) return nullptr;
    return &m_entries[static_cast<size_t>(row)];
}

int ClusterProfileListModel::rowOf(const QString& path) const {
    for (size_t i = 0; i < m_entries.size(); ++i)
        if (m_entries[i].path == path) return static_cast<int>(i);
    return -1;
}

int ClusterProfileListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_entries.size());
}

int ClusterProfileListModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ClusterProfileListModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return QVariant();
    const Entry& e = m_entries[static_cast<size_t>(index.row())];
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case NameColumn: return e.name();
        case HostsColumn:
            if (e.thisMachine) return LocalMachine::targetText();
            if (!e.profile) return tr("cannot be read");
            return e.profile->hosts.size() == 1 ? tr("1 host") : tr("%1 hosts").arg(e.profile->hosts.size());
        case FolderColumn: return QDir::toNativeSeparators(e.folder);
        }
        return QVariant();
    case Qt::ToolTipRole: {
        if (e.thisMachine) return tr("Where a run with launch.target = \"local\" starts its ranks");
        QString tip = QDir::toNativeSeparators(e.path);
        if (!e.error.isEmpty()) tip += QChar('\n') + e.error;
        if (!e.shadowedBy.isEmpty())
            tip += tr("\nlaunch.cluster = \"%1\" finds %2 first; name this one by its path").arg(e.name(), e.shadowedBy);
        return tip;
    }
    case Qt::ForegroundRole:
        if (!e.error.isEmpty()) return QColor(0xc6, 0x28, 0x28);
        if (!e.shadowedBy.isEmpty()) return QColor(0x75, 0x75, 0x75);
        return QVariant();
    case PathRole: return e.path;
    case ReferenceRole: return e.reference();
    case ErrorRole: return e.error;
    }
    return QVariant();
}

QVariant ClusterProfileListModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QVariant();
    switch (section) {
    case NameColumn: return tr("Profile");
    case HostsColumn: return tr("Hosts");
    case FolderColumn: return tr("Folder");
    }
    return QVariant();
}

} // namespace parallax
