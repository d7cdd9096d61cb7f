#include "ui/models/SpecFormModel.h"

#include "core/spec/SpecCompare.h"
#include "core/spec/SpecFields.h"
#include "core/spec/SpecIO.h"
#include "core/spec/TomlLimits.h"

#include <QFile>
#include <QFileInfo>
#include <QStringList>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

namespace parallax {

namespace {

std::optional<SpecFieldRef> findField(RunSpec& spec, const QString& path) {
    const std::string key = path.toStdString();
    for (const SpecField& f : specFields(spec))
        if (f.path() == key) return f.ref;
    return std::nullopt;
}

QStringList toQStringList(const std::vector<std::string>& v) {
    QStringList out;
    for (const std::string& s : v) out << QString::fromStdString(s);
    return out;
}

// An integer from a QVariant holding a number (or numeric text); nullopt otherwise.
std::optional<qlonglong> toInteger(const QVariant& value) {
    bool ok = false;
    if (value.typeId() == QMetaType::Double || value.typeId() == QMetaType::Float) {
        const double d = value.toDouble();
        if (std::floor(d) != d) return std::nullopt;
        return static_cast<qlonglong>(d);
    }
    const qlonglong n = value.toLongLong(&ok);
    return ok ? std::optional<qlonglong>(n) : std::nullopt;
}

// The first dimension the estimates cannot work with ("" when all are usable): a model of zero
// layers or heads has no size to estimate.
QString unusableDimension(const RunSpec& spec) {
    const ModelDims d = resolveModel(spec.model);
    const std::vector<std::pair<const char*, int64_t>> dims = modelDimensionFields(d);
    for (const auto& [name, value] : dims)
        if (value < 1) return QStringLiteral("%1 = %2 must be at least 1").arg(QLatin1String(name)).arg(value);
    return {};
}

// Which issue of one validation is the same as one of the next: its field, severity and related
// fields (the message changes with the values).
std::string issueKey(const SpecIssue& issue) {
    std::string key = issue.field + (issue.warning ? "\x1f" "w" : "\x1f" "e");
    for (const std::string& r : issue.related) key += "\x1f" + r;
    return key;
}

} // namespace

SpecFormModel::SpecFormModel(QObject* parent) : QObject(parent), m_machine(thisMachine()) {
    m_debounce.setSingleShot(true);
    m_debounce.setInterval(kDebounceMs);
    connect(&m_debounce, &QTimer::timeout, this, &SpecFormModel::validateNow);
    validateNow();
}

SpecFormModel::SpecFile SpecFormModel::readFile(const QString& path) {
    SpecFile out;
    // Through QFile, so that the presets compiled into the console (":/runs/...") read too.
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        out.error = tr("%1: cannot be read (%2); check the path").arg(path, file.errorString());
        return out;
    }
    try {
        // Bounded as the CLI reads: a device or a pipe opened as a spec is not read to its end.
        const QByteArray text = file.read(static_cast<qint64>(kMaxTomlBytes) + 1);
        out.spec = parseSpec(text.toStdString(), QFileInfo(path).fileName().toStdString(), out.unknown);
    } catch (const SpecError& e) {
        out.spec.reset();
        out.unknown.clear();
        out.error = QString::fromStdString(e.what());
    }
    return out;
}

void SpecFormModel::setSpec(const RunSpec& spec) {
    m_spec = spec;
    m_loaded = spec;
    m_inputErrors.clear();
    m_edited.clear();
    m_causes.assign(m_issues.size(), std::string());
    emit specReset();
    scheduleValidation();
}

bool SpecFormModel::isModified() const {
    return m_spec != m_loaded;
}

void SpecFormModel::noteEdit(const QString& path) {
    const std::string key = path.toStdString();
    m_edited.erase(std::remove(m_edited.begin(), m_edited.end(), key), m_edited.end());
    m_edited.push_back(key);
}

void SpecFormModel::edit(const QString& path, const std::function<void(RunSpec&)>& change) {
    change(m_spec);
    noteEdit(path);
    emit specEdited(path);
    scheduleValidation();
}

QVariant SpecFormModel::field(const QString& path) const {
    RunSpec copy = m_spec;
    const std::optional<SpecFieldRef> ref = findField(copy, path);
    if (!ref) return {};
    return std::visit(
        [](auto* p) -> QVariant {
            using T = std::decay_t<decltype(*p)>;
            if constexpr (std::is_same_v<T, std::string>) return QString::fromStdString(*p);
            else if constexpr (std::is_same_v<T, ChoiceField>) return QString::fromStdString(p->name());
            else if constexpr (std::is_same_v<T, bool>) return *p;
            else if constexpr (std::is_same_v<T, int64_t>) return qlonglong(*p);
            else if constexpr (std::is_same_v<T, uint64_t>) return qulonglong(*p);
            else if constexpr (std::is_same_v<T, double>) return *p;
            else if constexpr (std::is_same_v<T, std::optional<int64_t>>) return *p ? QVariant(qlonglong(**p)) : QVariant();
            else if constexpr (std::is_same_v<T, std::vector<std::string>>) return toQStringList(*p);
            else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
                QVariantList out;
                for (int64_t n : *p) out << qlonglong(n);
                return out;
            } else {
                QVariantMap out;
                for (const auto& [k, v] : *p) out.insert(QString::fromStdString(k), QString::fromStdString(v));
                return out;
            }
        },
        *ref);
}

bool SpecFormModel::setField(const QString& path, const QVariant& value) {
    RunSpec next = m_spec;
    const std::optional<SpecFieldRef> ref = findField(next, path);
    if (!ref) return false;
    const bool ok = std::visit(
        [&value](auto* p) -> bool {
            using T = std::decay_t<decltype(*p)>;
            if constexpr (std::is_same_v<T, std::string>) {
                if (!value.canConvert<QString>()) return false;
                *p = value.toString().toStdString();
                return true;
            } else if constexpr (std::is_same_v<T, ChoiceField>) {
                if (!value.canConvert<QString>()) return false;
                p->setName(value.toString().toStdString());
                return true;
            } else if constexpr (std::is_same_v<T, bool>) {
                *p = value.toBool();
                return true;
            } else if constexpr (std::is_same_v<T, int64_t>) {
                const auto n = toInteger(value);
                if (!n) return false;
                *p = *n;
                return true;
            } else if constexpr (std::is_same_v<T, uint64_t>) {
                bool ok = false;
                const qulonglong n = value.toULongLong(&ok);
                if (!ok) return false;
                *p = n;
                return true;
            } else if constexpr (std::is_same_v<T, double>) {
                bool ok = false;
                const double d = value.toDouble(&ok);
                if (!ok) return false;
                *p = d;
                return true;
            } else if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
                if (!value.isValid()) {
                    p->reset();
                    return true;
                }
                const auto n = toInteger(value);
                if (!n) return false;
                *p = *n;
                return true;
            } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
                std::vector<std::string> out;
                for (const QString& s : value.toStringList()) out.push_back(s.toStdString());
                *p = std::move(out);
                return true;
            } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
                std::vector<int64_t> out;
                for (const QVariant& v : value.toList()) {
                    const auto n = toInteger(v);
                    if (!n) return false;
                    out.push_back(*n);
                }
                *p = std::move(out);
                return true;
            } else {
                std::map<std::string, std::string> out;
                const QVariantMap map = value.toMap();
                for (auto it = map.begin(); it != map.end(); ++it)
                    out[it.key().toStdString()] = it.value().toString().toStdString();
                *p = std::move(out);
                return true;
            }
        },
        *ref);
    if (!ok) return false;
    m_spec = std::move(next);
    noteEdit(path);
    emit specEdited(path);
    scheduleValidation();
    return true;
}

void SpecFormModel::setInputError(const QString& path, const QString& message) {
    const auto it = m_inputErrors.find(path);
    const QString current = it == m_inputErrors.end() ? QString() : it->second;
    if (current == message) return;
    if (message.isEmpty()) m_inputErrors.erase(path);
    else m_inputErrors[path] = message;
    scheduleValidation();
}

QString SpecFormModel::inputError(const QString& path) const {
    const auto it = m_inputErrors.find(path);
    return it == m_inputErrors.end() ? QString() : it->second;
}

std::vector<SpecIssue> SpecFormModel::issuesFor(const QString& path) const {
    std::vector<SpecIssue> out;
    const std::string key = path.toStdString();
    for (const SpecIssue& issue : m_issues)
        if (issue.field == key) out.push_back(issue);
    return out;
}

std::vector<SpecIssue> SpecFormModel::issuesCausedBy(const QString& path) const {
    std::vector<SpecIssue> out;
    const std::string key = path.toStdString();
    for (size_t i = 0; i < m_issues.size() && i < m_causes.size(); ++i)
        if (m_causes[i] == key) out.push_back(m_issues[i]);
    return out;
}

QString SpecFormModel::causeOf(size_t index) const {
    return index < m_causes.size() ? QString::fromStdString(m_causes[index]) : QString();
}

bool SpecFormModel::hasErrors() const {
    return parallax::hasErrors(m_issues);
}

double SpecFormModel::physicalMemoryBytes() {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long pageSize = sysconf(_SC_PAGESIZE);
    return pages > 0 && pageSize > 0 ? double(pages) * double(pageSize) : 0.0;
}

int64_t SpecFormModel::ranksPerNode() const {
    // The layout's ranks: a launch.processes that differs from dp*tp*pp is an error the validator
    // names, and no run starts with it, so it must not divide the memory either.
    const int64_t world = std::max<int64_t>(1, m_spec.worldSize());
    if (m_spec.launch.target == Target::Hosts) {
        // The busiest host decides whether the layout fits.
        int64_t most = 0;
        for (const std::string& entry : m_spec.launch.hosts) {
            const size_t colon = entry.rfind(':');
            if (colon == std::string::npos) continue;
            try {
                most = std::max<int64_t>(most, std::stoll(entry.substr(colon + 1)));
            } catch (const std::exception&) {
                // The validator reports a malformed entry; it does not count here.
            }
        }
        return most > 0 ? std::min(most, world) : world;
    }
    if (m_spec.launch.target == Target::Slurm && m_spec.launch.gpus_per_node > 0)
        return std::min(m_spec.launch.gpus_per_node, world);
    return world;
}

double SpecFormModel::deviceCapacityBytes() const {
    if (m_spec.launch.device == Device::Cuda) return m_cudaMemoryGiB * 1024.0 * 1024.0 * 1024.0;
    return physicalMemoryBytes() / double(ranksPerNode());
}

void SpecFormModel::setMachine(const MachineInfo& machine) {
    m_machine = machine;
    scheduleValidation();
}

void SpecFormModel::setCudaMemoryGiB(double gib) {
    if (gib == m_cudaMemoryGiB) return;
    m_cudaMemoryGiB = gib;
    scheduleValidation();
}

void SpecFormModel::scheduleValidation() {
    m_debounce.start();
}

void SpecFormModel::validateNow() {
    m_debounce.stop();
    std::vector<SpecIssue> issues;
    for (const auto& [path, message] : m_inputErrors)
        issues.push_back({path.toStdString(), message.toStdString(), false});
    for (SpecIssue& issue : validateSpec(m_spec, m_machine)) {
        // A field whose text does not parse has a stale value in the spec: its own message is the
        // one that matters.
        if (m_inputErrors.count(QString::fromStdString(issue.field))) continue;
        issues.push_back(std::move(issue));
    }
    // The field a person changed is where they look: an issue of another field that appears (or
    // changes) right after the change is attributed to the changed field when it depends on it. One
    // that stays the same keeps what it was attributed to, so an unrelated edit does not move it.
    std::map<std::string, std::pair<std::string, std::string>> before; // key -> (message, cause)
    for (size_t i = 0; i < m_issues.size(); ++i)
        before.emplace(issueKey(m_issues[i]), std::pair{m_issues[i].message, i < m_causes.size() ? m_causes[i] : ""});
    std::vector<std::string> causes(issues.size());
    for (size_t i = 0; i < issues.size(); ++i) {
        const SpecIssue& issue = issues[i];
        const auto old = before.find(issueKey(issue));
        const bool changed = old == before.end() || old->second.first != issue.message;
        std::string cause = old == before.end() ? std::string() : old->second.second;
        if (changed) {
            for (auto it = m_edited.rbegin(); it != m_edited.rend(); ++it) {
                if (*it == issue.field) break; // the issue's own field changed: it is where it belongs
                if (std::find(issue.related.begin(), issue.related.end(), *it) != issue.related.end()) {
                    cause = *it;
                    break;
                }
            }
        }
        causes[i] = std::move(cause);
    }
    m_edited.clear();
    m_issues = std::move(issues);
    m_causes = std::move(causes);
    try {
        const QString unusable = unusableDimension(m_spec);
        if (!unusable.isEmpty()) throw std::invalid_argument(unusable.toStdString());
        m_estimates = estimate(m_spec);
        m_estimateError.clear();
    } catch (const std::exception& e) {
        m_estimates.reset();
        m_estimateError = QString::fromStdString(e.what());
    }
    emit validated();
}

} // namespace parallax
