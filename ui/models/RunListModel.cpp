#include "ui/models/RunListModel.h"

#include "core/util/Duration.h"
#include "ui/models/RunColors.h"

#include "ui/models/RunStoreThread.h"
#include "ui/models/TableRoles.h"

#include <QDateTime>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>

namespace parallax {

namespace {

// An index of a cell of this table; views also ask about the root, which has no data.
bool isCell(const QAbstractItemModel* model, const QModelIndex& index) {
    return index.isValid() && index.model() == model && !index.parent().isValid() && index.row() < model->rowCount() &&
           index.column() < model->columnCount();
}


// Past this many inserted or removed rows a reset is cheaper for the views than row signals.
constexpr size_t kResetThreshold = 256;

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

QString joinTags(const std::vector<std::string>& tags) {
    QStringList out;
    for (const std::string& t : tags) out << q(t);
    return out.join(QStringLiteral(", "));
}

// The first and last column whose text differs between two snapshots of a run; nothing when the
// row shows the same. Views refresh the editors of every cell a change covers with the stored value,
// so a change of a training run's steps must not cover the note a person is typing beside them.
std::optional<std::pair<int, int>> changedColumns(const RunRecord& a, const RunRecord& b) {
    int first = RunListModel::ColumnCount, last = -1;
    const auto mark = [&](bool differs, int column) {
        if (!differs) return;
        first = std::min(first, column);
        last = std::max(last, column);
    };
    mark(a.state != b.state || a.exit_code != b.exit_code || a.exit_reason != b.exit_reason,
         RunListModel::StateColumn);
    mark(a.name != b.name || a.parent_run != b.parent_run, RunListModel::NameColumn);
    mark(a.model_kind != b.model_kind, RunListModel::ModelColumn);
    mark(a.layout != b.layout || a.world_size != b.world_size, RunListModel::LayoutColumn);
    mark(a.last_step != b.last_step || a.steps_total != b.steps_total, RunListModel::StepsColumn);
    mark(a.last_loss != b.last_loss, RunListModel::LossColumn);
    mark(a.tokens_per_s != b.tokens_per_s, RunListModel::TokensPerSecondColumn);
    mark(a.mfu != b.mfu, RunListModel::MfuColumn);
    mark(a.started_at != b.started_at || a.ended_at != b.ended_at, RunListModel::DurationColumn);
    mark(a.created_at != b.created_at, RunListModel::CreatedColumn);
    mark(a.tags != b.tags, RunListModel::TagsColumn);
    mark(a.notes != b.notes, RunListModel::NotesColumn);
    const bool specChanged = a.spec_toml != b.spec_toml;
    mark(specChanged, RunListModel::BaseModelColumn);
    mark(specChanged, RunListModel::FinetuneColumn);
    if (last < 0) return std::nullopt;
    return std::make_pair(first, last);
}

QString formatNumber(double value, int significant) {
    return QString::number(value, 'g', significant);
}

} // namespace

RunListModel::RunListModel(QObject* parent) : QAbstractTableModel(parent) {
    m_now = double(QDateTime::currentMSecsSinceEpoch()) / 1000.0;
}

void RunListModel::setWriter(RunStoreThread* writer) {
    m_writer = writer;
}

QString RunListModel::buildSearchText(const RunRecord& r) {
    QString text = QString::number(r.id);
    for (const std::string* s : {&r.name, &runStateName(r.state), &r.model_kind, &r.layout, &r.notes})
        text += QChar('\n') + q(*s);
    for (const std::string& t : r.tags) text += QChar('\n') + q(t);
    return text.toLower();
}

void RunListModel::applyPending(RunRecord& r) const {
    const auto it = m_pending.find(r.id);
    if (it == m_pending.end()) return;
    if (it->second.tags) r.tags = *it->second.tags;
    if (it->second.notes) r.notes = *it->second.notes;
}

void RunListModel::setRuns(std::vector<RunRecord> runs) {
    std::sort(runs.begin(), runs.end(), [](const RunRecord& a, const RunRecord& b) { return a.id > b.id; });
    for (RunRecord& r : runs) applyPending(r);

    // How many rows would come and go: a large change (the first snapshot, another store) resets.
    size_t structural = 0;
    {
        size_t i = 0, j = 0;
        while (i < m_runs.size() || j < runs.size()) {
            if (i < m_runs.size() && j < runs.size() && m_runs[i].id == runs[j].id) {
                ++i;
                ++j;
            } else if (j >= runs.size() || (i < m_runs.size() && m_runs[i].id > runs[j].id)) {
                ++i;
                ++structural;
            } else {
                ++j;
                ++structural;
            }
        }
    }
    if (m_runs.empty() || structural > kResetThreshold) {
        beginResetModel();
        m_runs = std::move(runs);
        m_origins.clear();
        m_search.clear();
        m_search.reserve(m_runs.size());
        for (const RunRecord& r : m_runs) m_search.push_back(buildSearchText(r));
        endResetModel();
        return;
    }

    size_t i = 0, j = 0;
    while (j < runs.size() || i < m_runs.size()) {
        if (i < m_runs.size() && j < runs.size() && m_runs[i].id == runs[j].id) {
            const auto changed = changedColumns(m_runs[i], runs[j]);
            // Fields no column shows (spec, folder, hosts) are taken without a signal.
            m_runs[i] = std::move(runs[j]);
            if (changed) {
                m_search[i] = buildSearchText(m_runs[i]);
                emit dataChanged(index(int(i), changed->first), index(int(i), changed->second));
            }
            ++i;
            ++j;
        } else if (j >= runs.size() || (i < m_runs.size() && m_runs[i].id > runs[j].id)) {
            // Gone from the store: remove the run of consecutive vanished rows at once.
            size_t end = i;
            while (end < m_runs.size() && (j >= runs.size() || m_runs[end].id > runs[j].id)) ++end;
            beginRemoveRows({}, int(i), int(end - 1));
            m_runs.erase(m_runs.begin() + long(i), m_runs.begin() + long(end));
            m_search.erase(m_search.begin() + long(i), m_search.begin() + long(end));
            endRemoveRows();
        } else {
            // New runs before row i.
            size_t end = j;
            while (end < runs.size() && (i >= m_runs.size() || runs[end].id > m_runs[i].id)) ++end;
            beginInsertRows({}, int(i), int(i + (end - j) - 1));
            std::vector<QString> texts;
            for (size_t k = j; k < end; ++k) texts.push_back(buildSearchText(runs[k]));
            m_runs.insert(m_runs.begin() + long(i), std::make_move_iterator(runs.begin() + long(j)),
                          std::make_move_iterator(runs.begin() + long(end)));
            m_search.insert(m_search.begin() + long(i), texts.begin(), texts.end());
            endInsertRows();
            i += end - j;
            j = end;
        }
    }
}

void RunListModel::setNow(double now) {
    m_now = now;
    // Durations of runs still going grow with the clock.
    for (size_t i = 0; i < m_runs.size(); ++i) {
        const RunRecord& r = m_runs[i];
        if (r.started_at > 0 && r.ended_at <= 0)
            emit dataChanged(index(int(i), DurationColumn), index(int(i), DurationColumn));
    }
}

int RunListModel::rowOfRun(int64_t id) const {
    // Rows are by descending id.
    const auto it = std::lower_bound(m_runs.begin(), m_runs.end(), id,
                                     [](const RunRecord& r, int64_t value) { return r.id > value; });
    return it != m_runs.end() && it->id == id ? int(it - m_runs.begin()) : -1;
}

std::optional<RunRecord> RunListModel::run(int64_t id) const {
    const int row = rowOfRun(id);
    if (row < 0) return std::nullopt;
    return m_runs[static_cast<size_t>(row)];
}

int RunListModel::runningCount() const {
    return int(std::count_if(m_runs.begin(), m_runs.end(), [](const RunRecord& r) {
        return r.state == RunState::Running || r.state == RunState::Queued;
    }));
}

const RunOrigin& RunListModel::origin(int row) const {
    static const RunOrigin none;
    if (row < 0 || row >= rowCount()) return none;
    const RunRecord& r = record(row);
    const size_t hash = std::hash<std::string>()(r.spec_toml);
    auto it = m_origins.find(r.id);
    if (it == m_origins.end() || it->second.specHash != hash)
        it = m_origins.insert_or_assign(r.id, CachedOrigin{hash, RunOrigin::of(r)}).first;
    return it->second.origin;
}

double RunListModel::durationOf(const RunRecord& r) const {
    if (r.started_at <= 0) return -1;
    const double end = r.ended_at > 0 ? r.ended_at : m_now;
    return std::max(0.0, end - r.started_at);
}

QColor RunListModel::stateColor(const QString& state) {
    const std::optional<RunState> known = runStateNamed(state.toStdString());
    return known ? RunColors::stateColor(*known) : QColor();
}

QString RunListModel::formatDuration(double seconds) {
    if (seconds < 0) return {};
    return QString::fromStdString(parallax::formatDuration(seconds, " "));
}

QStringList RunListModel::parseTags(const QString& text) {
    static const QRegularExpression separators(QStringLiteral("[,\\s]+"));
    QStringList out;
    for (const QString& t : text.split(separators, Qt::SkipEmptyParts))
        if (!out.contains(t)) out << t;
    return out;
}

void RunListModel::setResumeSteps(const std::map<int64_t, int64_t>& steps) {
    for (const auto& [id, step] : steps) {
        const auto it = m_resumeSteps.find(id);
        if (it != m_resumeSteps.end() && it->second == step) continue;
        m_resumeSteps[id] = step;
        const int row = rowOfRun(id);
        if (row >= 0) emit dataChanged(index(row, 0), index(row, ColumnCount - 1));
        // The parent's tooltip names the step too.
        const std::optional<RunRecord> child = run(id);
        const int parentRow = child && child->parent_run ? rowOfRun(*child->parent_run) : -1;
        if (parentRow >= 0) emit dataChanged(index(parentRow, 0), index(parentRow, ColumnCount - 1));
    }
}

QString RunListModel::resumedFromText(const RunRecord& r) const {
    if (!r.parent_run) return {};
    const auto step = m_resumeSteps.find(r.id);
    return step == m_resumeSteps.end() || step->second <= 0
               ? tr("resumed from #%1").arg(*r.parent_run)
               : tr("resumed from #%1 at step %2").arg(*r.parent_run).arg(step->second);
}

QString RunListModel::lineageText(const RunRecord& r) const {
    QStringList lines;
    if (r.parent_run) {
        const std::optional<RunRecord> parent = run(*r.parent_run);
        const auto step = m_resumeSteps.find(r.id);
        QString line = parent && !parent->name.empty()
                           ? tr("Resumed from run #%1 %2").arg(*r.parent_run).arg(q(parent->name))
                           : tr("Resumed from run #%1").arg(*r.parent_run);
        if (step != m_resumeSteps.end() && step->second > 0)
            line += tr(" at step %1, from its checkpoint: steps before %1 are in run #%2").arg(step->second).arg(*r.parent_run);
        lines << line;
    }
    // Rows are by descending id: the runs that resumed this one come before it, oldest last.
    for (auto it = m_runs.rbegin(); it != m_runs.rend(); ++it) {
        if (!it->parent_run || *it->parent_run != r.id) continue;
        const auto step = m_resumeSteps.find(it->id);
        lines << (step != m_resumeSteps.end() && step->second > 0
                      ? tr("Resumed as run #%1 at step %2 (%3)").arg(it->id).arg(step->second).arg(q(runStateName(it->state)))
                      : tr("Resumed as run #%1 (%2)").arg(it->id).arg(q(runStateName(it->state))));
    }
    return lines.join(QChar('\n'));
}

std::optional<double> RunListModel::sortNumber(int row, int column) const {
    const RunRecord& r = record(row);
    switch (column) {
    case IdColumn: return double(r.id);
    case StepsColumn: return double(stepsDoneAfter(r.last_step));
    case LossColumn: return r.last_loss;
    case TokensPerSecondColumn: return r.tokens_per_s;
    case MfuColumn: return r.mfu;
    case DurationColumn: {
        const double d = durationOf(r);
        return d < 0 ? std::nullopt : std::optional<double>(d);
    }
    case CreatedColumn: return r.created_at;
    default: return std::nullopt;
    }
}

QVariant RunListModel::rawValue(int row, int column) const {
    const RunRecord& r = record(row);
    const auto number = [](const std::optional<double>& v) { return v ? QVariant(*v) : QVariant(); };
    switch (column) {
    case IdColumn: return qlonglong(r.id);
    case StateColumn: return q(runStateName(r.state));
    case NameColumn: return QVariantList{q(r.name), r.parent_run ? QVariant(qlonglong(*r.parent_run)) : QVariant()};
    case ModelColumn: return q(r.model_kind);
    case LayoutColumn: return q(r.layout);
    case StepsColumn:
        return QVariantList{qlonglong(r.last_step < 0 ? 0 : stepsDoneAfter(r.last_step)),
                            r.steps_total > 0 ? QVariant(qlonglong(r.steps_total)) : QVariant()};
    case LossColumn: return number(r.last_loss);
    case TokensPerSecondColumn: return number(r.tokens_per_s);
    case MfuColumn: return number(r.mfu);
    case DurationColumn: return number(sortNumber(row, DurationColumn));
    case CreatedColumn: return r.created_at > 0 ? QVariant(r.created_at) : QVariant();
    case TagsColumn: {
        QStringList tags;
        for (const std::string& t : r.tags) tags << q(t);
        return tags.join(QChar(','));
    }
    case NotesColumn: return q(r.notes);
    case BaseModelColumn: {
        const RunOrigin& o = origin(row);
        if (!o.hasSpec()) return QVariantList{QVariant(), QVariant()};
        return QVariantList{o.from.isEmpty() ? QVariant() : QVariant(o.from), o.preset.isEmpty() ? QVariant() : QVariant(o.preset)};
    }
    case FinetuneColumn: {
        const RunOrigin& o = origin(row);
        if (!o.published || !o.specError.isEmpty()) return QVariantList{QVariant(), QVariant()};
        return QVariantList{o.lora ? QStringLiteral("lora") : QStringLiteral("full"),
                            o.lora ? QVariant(qlonglong(o.loraRank)) : QVariant()};
    }
    default: return {};
    }
}

int RunListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_runs.size());
}

int RunListModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RunListModel::data(const QModelIndex& index, int role) const {
    if (!isCell(this, index)) return {};
    const RunRecord& r = record(index.row());
    const int column = index.column();
    switch (role) {
    case RunIdRole: return qlonglong(r.id);
    case StateRole: return q(runStateName(r.state));
    case RawValueRole: return rawValue(index.row(), column);
    case SortRole: {
        if (const std::optional<double> n = sortNumber(index.row(), column)) return *n;
        if (column == StepsColumn || column == LossColumn || column == TokensPerSecondColumn || column == MfuColumn ||
            column == DurationColumn)
            return {};
        return data(index, Qt::DisplayRole).toString().toLower();
    }
    case Qt::DisplayRole:
    case Qt::EditRole:
        switch (column) {
        case IdColumn: return qlonglong(r.id);
        case StateColumn: return q(runStateName(r.state));
        case NameColumn:
            if (role == Qt::DisplayRole && r.parent_run) return q(r.name) + QStringLiteral("  (") + resumedFromText(r) + QChar(')');
            return q(r.name);
        case ModelColumn: return q(r.model_kind);
        case LayoutColumn: return q(r.layout);
        case StepsColumn:
            // Steps done (the last recorded step counts from 0) of the planned total.
            if (r.last_step < 0) return r.steps_total > 0 ? QStringLiteral("0 / %1").arg(r.steps_total) : QString();
            return QStringLiteral("%1 / %2").arg(stepsDoneAfter(r.last_step)).arg(r.steps_total);
        case LossColumn: return r.last_loss ? formatNumber(*r.last_loss, 5) : QString();
        case TokensPerSecondColumn: return r.tokens_per_s ? QString::number(*r.tokens_per_s, 'f', 0) : QString();
        case MfuColumn: return r.mfu ? QStringLiteral("%1%").arg(*r.mfu * 100.0, 0, 'f', 1) : QString();
        case DurationColumn: return formatDuration(durationOf(r));
        case CreatedColumn:
            return r.created_at > 0
                       ? QDateTime::fromMSecsSinceEpoch(qint64(r.created_at * 1000.0)).toString(QStringLiteral("yyyy-MM-dd HH:mm"))
                       : QString();
        case TagsColumn: return joinTags(r.tags);
        case NotesColumn: return q(r.notes);
        case BaseModelColumn: return origin(index.row()).baseModel;
        case FinetuneColumn: return origin(index.row()).mode;
        default: return {};
        }
    case Qt::ForegroundRole:
        if (column == StateColumn) return RunColors::stateColor(r.state);
        return {};
    case Qt::TextAlignmentRole:
        if (column == IdColumn || column == StepsColumn || column == LossColumn || column == TokensPerSecondColumn ||
            column == MfuColumn || column == DurationColumn)
            return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    case Qt::ToolTipRole:
        if (column == StateColumn && !r.exit_reason.empty()) {
            QString text = q(r.exit_reason);
            if (r.exit_code) text += tr(" (exit code %1)").arg(*r.exit_code);
            return text;
        }
        if (column == NotesColumn && !r.notes.empty()) return q(r.notes);
        if (column == IdColumn || column == NameColumn || column == StepsColumn) {
            const QString lineage = lineageText(r);
            if (!lineage.isEmpty()) return lineage;
        }
        if (column == LayoutColumn && r.world_size > 0) return tr("%1 processes").arg(r.world_size);
        if (column == BaseModelColumn) {
            const QString tip = origin(index.row()).baseModelTip;
            return tip.isEmpty() ? QVariant() : QVariant(tip);
        }
        return {};
    default: return {};
    }
}

QVariant RunListModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
    if (role == RawValueRole) {
        // The names of RunRecord's fields, with the unit where the value has one.
        switch (section) {
        case NameColumn: return QStringList{QStringLiteral("name"), QStringLiteral("parent_run")};
        case StepsColumn: return QStringList{QStringLiteral("steps_done"), QStringLiteral("steps_total")};
        case BaseModelColumn: return QStringList{QStringLiteral("model_from"), QStringLiteral("model_preset")};
        case FinetuneColumn: return QStringList{QStringLiteral("finetune_mode"), QStringLiteral("lora_r")};
        default: break;
        }
        static const char* fields[] = {"id",   "state", "name",       "model",      "layout", "steps", "loss",
                                       "tokens_per_s", "mfu", "duration_s", "created_at", "tags",   "notes"};
        static_assert(sizeof(fields) / sizeof(fields[0]) == BaseModelColumn, "a field name per column of one value");
        return QString::fromLatin1(fields[section]);
    }
    if (role != Qt::DisplayRole) return {};
    static const char* names[] = {QT_TR_NOOP("ID"),       QT_TR_NOOP("State"),    QT_TR_NOOP("Name"),
                                  QT_TR_NOOP("Model"),    QT_TR_NOOP("Layout"),   QT_TR_NOOP("Steps"),
                                  QT_TR_NOOP("Loss"),     QT_TR_NOOP("Tokens/s"), QT_TR_NOOP("MFU"),
                                  QT_TR_NOOP("Duration"), QT_TR_NOOP("Created"),  QT_TR_NOOP("Tags"),
                                  QT_TR_NOOP("Notes"),    QT_TR_NOOP("Base model"), QT_TR_NOOP("Finetune")};
    static_assert(sizeof(names) / sizeof(names[0]) == ColumnCount, "a header per column");
    return tr(names[section]);
}

Qt::ItemFlags RunListModel::flags(const QModelIndex& index) const {
    if (!isCell(this, index)) return Qt::NoItemFlags;
    Qt::ItemFlags f = Qt::ItemIsSelectable | Qt::ItemIsEnabled | Qt::ItemNeverHasChildren;
    if (m_writer && (index.column() == TagsColumn || index.column() == NotesColumn)) f |= Qt::ItemIsEditable;
    return f;
}

bool RunListModel::setData(const QModelIndex& index, const QVariant& value, int role) {
    if (role != Qt::EditRole || !m_writer ||
        !isCell(this, index))
        return false;
    const int column = index.column();
    if (column != TagsColumn && column != NotesColumn) return false;

    const size_t row = static_cast<size_t>(index.row());
    RunRecord& r = m_runs[row];
    const int64_t id = r.id;
    Pending& pending = m_pending[id];
    std::function<void(RunStore&)> job;
    if (column == TagsColumn) {
        std::vector<std::string> tags;
        for (const QString& t : parseTags(value.toString())) tags.push_back(t.toStdString());
        if (tags == r.tags && !pending.tags) return true;
        r.tags = tags;
        pending.tags = tags;
        job = [id, tags](RunStore& store) { store.setTags(id, tags); };
    } else {
        const std::string notes = value.toString().toStdString();
        if (notes == r.notes && !pending.notes) return true;
        r.notes = notes;
        pending.notes = notes;
        job = [id, notes](RunStore& store) { store.setNotes(id, notes); };
    }
    ++pending.writes;
    m_search[row] = buildSearchText(r);
    emit dataChanged(index, index, {Qt::DisplayRole, Qt::EditRole});

    auto settle = [this, id] {
        auto it = m_pending.find(id);
        if (it != m_pending.end() && --it->second.writes <= 0) m_pending.erase(it);
    };
    m_writer->write(std::move(job), this, settle, [this, id, settle](const QString& message) {
        // The store did not take the edit: forget it, so that the next snapshot shows what is stored.
        settle();
        m_pending.erase(id);
        emit writeFailed(message);
    });
    return true;
}

} // namespace parallax
