#include "ui/models/ClusterHostsModel.h"

#include "core/spec/ClusterProfile.h"

#include <QColor>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>

namespace parallax {

namespace {

const QColor kGood(0x2e, 0x7d, 0x32);
const QColor kBad(0xc6, 0x28, 0x28);
const QColor kWarn(0xb2, 0x6a, 0x00);
const QColor kQuiet(0x75, 0x75, 0x75);

QString q(const std::string& s) { return QString::fromStdString(s); }

QStringList toList(const std::vector<std::string>& v) {
    QStringList out;
    for (const std::string& s : v) out << q(s);
    return out;
}

// "NVIDIA H200, 143771 MiB": the name, and the memory in GiB (-1 when it does not say).
std::pair<QString, double> splitGpu(const QString& gpu) {
    static const QRegularExpression memory(QStringLiteral("^(.*),\\s*([0-9.]+)\\s*MiB\\s*$"));
    const QRegularExpressionMatch m = memory.match(gpu);
    if (!m.hasMatch()) return {gpu.trimmed(), -1};
    return {m.captured(1).trimmed(), m.captured(2).toDouble() / 1024.0};
}

QString gib(double value) { return QString::number(value, 'f', value < 10 ? 1 : 0) + QStringLiteral(" GiB"); }

} // namespace

ClusterHostsModel::ClusterHostsModel(QObject* parent) : QAbstractTableModel(parent) {}

void ClusterHostsModel::setHosts(const std::vector<std::string>& entries) {
    beginResetModel();
    m_checks.clear();
    for (const std::string& entry : entries) {
        HostCheck c;
        const std::optional<HostSlots> parsed = parseHostSlots(entry);
        c.host = parsed ? parsed->name : entry;
        c.slot_count = parsed ? parsed->slot_count : 0;
        m_checks.push_back(std::move(c));
    }
    m_localBuild.clear();
    m_checked = false;
    m_checking = false;
    endResetModel();
}

void ClusterHostsModel::setChecking(bool checking) {
    if (checking == m_checking) return;
    m_checking = checking;
    emitAllChanged();
}

void ClusterHostsModel::setChecks(const std::vector<HostCheck>& checks, const std::string& localBuild) {
    const bool sameHosts = checks.size() == m_checks.size() &&
                           std::equal(checks.begin(), checks.end(), m_checks.begin(),
                                      [](const HostCheck& a, const HostCheck& b) { return a.host == b.host; });
    if (!sameHosts) beginResetModel();
    m_checks = checks;
    m_localBuild = localBuild;
    m_checked = true;
    m_checking = false;
    if (sameHosts) emitAllChanged();
    else endResetModel();
}

void ClusterHostsModel::clear() {
    setHosts({});
}

void ClusterHostsModel::emitAllChanged() {
    if (!m_checks.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

ClusterHostsModel::HostState ClusterHostsModel::state(int row) const {
    if (row < 0 || row >= rowCount()) return HostState::NotChecked;
    if (m_checking) return HostState::Checking;
    if (!m_checked) return HostState::NotChecked;
    return m_checks[static_cast<size_t>(row)].reachable ? HostState::Reachable : HostState::NotReachable;
}

ClusterHostsModel::WorkerState ClusterHostsModel::workerState(int row) const {
    if (state(row) != HostState::Reachable) return WorkerState::Unknown;
    const HostCheck& c = m_checks[static_cast<size_t>(row)];
    if (c.worker_build.empty()) return WorkerState::Missing;
    if (m_localBuild.empty()) return WorkerState::NothingHere;
    return c.worker_build == m_localBuild ? WorkerState::Same : WorkerState::Other;
}

QString ClusterHostsModel::gpuSummary(const std::vector<std::string>& gpus) {
    // Identical GPUs (the usual case) are counted together; a host with mixed GPUs lists each kind.
    std::vector<std::pair<QString, int>> kinds;
    for (const std::string& gpu : gpus) {
        const QString g = q(gpu);
        auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == g; });
        if (it == kinds.end()) kinds.emplace_back(g, 1);
        else ++it->second;
    }
    QStringList parts;
    for (const auto& [gpu, count] : kinds) {
        const auto [name, memory] = splitGpu(gpu);
        QString part = QStringLiteral("%1 × %2").arg(count).arg(name);
        if (memory > 0) part += count > 1 ? tr(" (%1 each)").arg(gib(memory)) : QStringLiteral(" (%1)").arg(gib(memory));
        parts << part;
    }
    return parts.join(QStringLiteral("; "));
}

int ClusterHostsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_checks.size());
}

int ClusterHostsModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QString ClusterHostsModel::text(int row, int column) const {
    const HostCheck& c = m_checks[static_cast<size_t>(row)];
    const HostState s = state(row);
    if (column == HostColumn) return q(c.host);
    if (column == SlotsColumn) return c.slot_count > 0 ? QString::number(c.slot_count) : QString();
    if (column == StateColumn) {
        switch (s) {
        case HostState::NotChecked: return tr("not checked");
        case HostState::Checking: return tr("checking…");
        case HostState::Reachable: return tr("reachable");
        case HostState::NotReachable: return tr("not reachable");
        }
    }
    // What the last check found stays out of sight while a new one runs: it may be stale.
    if (s != HostState::Reachable && column != ProblemsColumn) return QString();
    switch (column) {
    case HostnameColumn: return q(c.hostname);
    case LatencyColumn: return c.latency_ms >= 0 ? tr("%1 ms").arg(c.latency_ms, 0, 'f', 0) : QString();
    case CoresColumn: return c.cores > 0 ? QString::number(c.cores) : tr("?");
    case GpusColumn: return c.gpus.empty() ? tr("none") : gpuSummary(c.gpus);
    case WorkerColumn:
        switch (workerState(row)) {
        case WorkerState::Same: return tr("same build as here");
        case WorkerState::Other: return tr("another build (sha256 %1…)").arg(q(c.worker_build.substr(0, 12)));
        case WorkerState::Missing: return tr("missing");
        case WorkerState::NothingHere: return tr("sha256 %1… (no worker here to compare)").arg(q(c.worker_build.substr(0, 12)));
        case WorkerState::Unknown: return QString();
        }
        return QString();
    case LoadColumn: return c.load >= 0 ? QString::number(c.load, 'f', 2) : tr("?");
    case RanksColumn: return QString::number(c.ranks_running);
    case ProblemsColumn:
        if (s == HostState::NotChecked || s == HostState::Checking) return QString();
        if (!c.problems.empty()) {
            QString first = q(c.problems.front());
            if (c.problems.size() > 1) first += tr(" (+%1 more)").arg(c.problems.size() - 1);
            return first;
        }
        return c.notes.empty() ? tr("ready") : tr("ready; %1").arg(q(c.notes.front()));
    }
    return QString();
}

QString ClusterHostsModel::toolTip(int row, int column) const {
    const HostCheck& c = m_checks[static_cast<size_t>(row)];
    const HostState s = state(row);
    switch (column) {
    case HostColumn:
        return c.slot_count > 0 ? (c.slot_count == 1 ? tr("%1: 1 slot in the profile").arg(q(c.host)) : tr("%1: %2 slots in the profile").arg(q(c.host)).arg(c.slot_count)) : q(c.host);
    case StateColumn:
        return s == HostState::NotChecked ? tr("Not checked yet: Test connection asks every host over ssh") : QString();
    case HostnameColumn: return s == HostState::Reachable ? tr("The name %1 gives itself").arg(q(c.host)) : QString();
    case LatencyColumn: return tr("How long the whole check over ssh took (connection included)");
    case GpusColumn: return s == HostState::Reachable ? (c.gpus.empty() ? tr("nvidia-smi lists no GPU there") : toList(c.gpus).join(QChar('\n'))) : QString();
    case WorkerColumn:
        if (s != HostState::Reachable) return QString();
        return tr("sha256 there: %1\nsha256 here: %2")
            .arg(c.worker_build.empty() ? tr("(no worker)") : q(c.worker_build),
                 m_localBuild.empty() ? tr("(no worker)") : q(m_localBuild));
    case LoadColumn:
        return s == HostState::Reachable && c.cores > 0 ? tr("1-minute load average, on %1 cores").arg(c.cores) : QString();
    case RanksColumn: return tr("parallax-worker processes running there now (any run's)");
    case ProblemsColumn: {
        QStringList lines;
        for (const std::string& p : c.problems) lines << tr("problem: %1").arg(q(p));
        for (const std::string& n : c.notes) lines << tr("note: %1").arg(q(n));
        return lines.join(QChar('\n'));
    }
    }
    return QString();
}

QVariant ClusterHostsModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return QVariant();
    const int row = index.row();
    const int column = index.column();
    const HostCheck& c = m_checks[static_cast<size_t>(row)];
    const HostState s = state(row);
    switch (role) {
    case Qt::DisplayRole: return text(row, column);
    case Qt::ToolTipRole: {
        const QString tip = toolTip(row, column);
        return tip.isEmpty() ? QVariant() : QVariant(tip);
    }
    case Qt::ForegroundRole:
        if (column == StateColumn) {
            if (s == HostState::Reachable) return kGood;
            if (s == HostState::NotReachable) return kBad;
            return kQuiet;
        }
        if (column == WorkerColumn) {
            const WorkerState w = workerState(row);
            if (w == WorkerState::Same) return kGood;
            if (w == WorkerState::Other || w == WorkerState::Missing) return kBad;
            return QVariant();
        }
        if (column == RanksColumn && s == HostState::Reachable && c.ranks_running > 0) return kWarn;
        if (column == ProblemsColumn && s != HostState::Checking && m_checked)
            return !c.problems.empty() ? kBad : c.notes.empty() ? kGood : kWarn;
        return QVariant();
    case Qt::TextAlignmentRole:
        if (column == SlotsColumn || column == LatencyColumn || column == CoresColumn || column == LoadColumn ||
            column == RanksColumn)
            return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        return QVariant();
    case HostStateRole: return int(s);
    case WorkerStateRole: return int(workerState(row));
    case ProblemsRole: return s == HostState::Checking ? QStringList() : toList(c.problems);
    case NotesRole: return s == HostState::Checking ? QStringList() : toList(c.notes);
    }
    return QVariant();
}

QVariant ClusterHostsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return QVariant();
    if (role == Qt::DisplayRole) {
        const char* names[] = {QT_TR_NOOP("Host"),    QT_TR_NOOP("Slots"),  QT_TR_NOOP("State"),
                               QT_TR_NOOP("Hostname"), QT_TR_NOOP("Latency"), QT_TR_NOOP("Cores"),
                               QT_TR_NOOP("GPUs"),    QT_TR_NOOP("Worker"), QT_TR_NOOP("Load"),
                               QT_TR_NOOP("Ranks running"), QT_TR_NOOP("Problems")};
        return tr(names[section]);
    }
    return QVariant();
}

} // namespace parallax
