#include "ui/models/LocalMachineSummary.h"

#include "core/launch/Preflight.h"

#include <QFileInfo>
#include <QStandardPaths>
#include <QSysInfo>
#include <QThread>

#include <memory>

namespace parallax {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

QString gib(int64_t bytes) {
    return QObject::tr("%1 GiB").arg(double(bytes) / kGiB, 0, 'f', 1);
}

QString fileKey(const QFileInfo& f) {
    return f.absoluteFilePath() + QChar('\n') + QString::number(f.size()) + QChar('\n') +
           QString::number(f.lastModified().toMSecsSinceEpoch());
}

} // namespace

QString LocalMachine::title() {
    return QObject::tr("This machine");
}

QString LocalMachine::targetText() {
    return QObject::tr("launch.target = \"local\"");
}

QString LocalMachine::details() const {
    QStringList lines;
    lines << QObject::tr("Host name: %1").arg(hostName.isEmpty() ? QObject::tr("unknown") : hostName);
    lines << QObject::tr("Cores: %1 · Memory: %2")
                 .arg(machine.cores > 0 ? QString::number(machine.cores) : QObject::tr("unknown"),
                      machine.ram_bytes > 0 ? gib(machine.ram_bytes) : QObject::tr("unknown"));
    lines << (machine.gpu_memory_bytes ? QObject::tr("GPUs: %1 of memory each").arg(gib(*machine.gpu_memory_bytes))
                                       : QObject::tr("GPUs: none reported (CPU only here)"));
    QString build;
    if (!workerExists) build = QObject::tr("missing: there is no file there");
    else if (!buildKnown) build = QObject::tr("computing its build…");
    else if (workerBuild.isEmpty()) build = QObject::tr("its build could not be read");
    else build = QObject::tr("build sha256 %1…").arg(workerBuild.left(12));
    lines << QObject::tr("Worker: %1 (%2)").arg(worker, build);
    lines << (mpirun.isEmpty() ? QObject::tr("MPI launcher: mpirun is not on PATH")
                               : QObject::tr("MPI launcher: %1").arg(mpirun));
    lines << QObject::tr("launch.target = \"local\" runs %1 -np N --tag-output --bind-to … %2 --spec S --run-dir D "
                         "here: N ranks on these %3 cores (--oversubscribe beyond them), over shared memory, "
                         "listening on loopback only.")
                 .arg(mpirun.isEmpty() ? QStringLiteral("mpirun") : mpirun, worker,
                      machine.cores > 0 ? QString::number(machine.cores) : QObject::tr("unknown"));
    return lines.join(QChar('\n'));
}

QStringList LocalMachine::problems() const {
    QStringList out;
    if (!workerExists)
        out << QObject::tr("there is no parallax-worker at %1: build it (ninja parallax-worker) or set PARALLAX_WORKER "
                           "to its path")
                   .arg(worker);
    if (mpirun.isEmpty())
        out << QObject::tr("mpirun is not on PATH: install Open MPI or add its bin folder to PATH");
    return out;
}

QString LocalMachine::status() const {
    if (!problems().isEmpty()) return QObject::tr("A local run cannot start here yet (each problem names its fix, below).");
    if (!buildKnown) return QObject::tr("Reading the worker's build…");
    return QObject::tr("A local run can start here.");
}

LocalMachine readLocalMachine(const QString& worker) {
    LocalMachine m;
    m.hostName = QSysInfo::machineHostName();
    m.machine = thisMachine();
    m.worker = worker;
    m.workerExists = QFileInfo(worker).isFile();
    m.mpirun = QStandardPaths::findExecutable(QStringLiteral("mpirun"));
    return m;
}

LocalMachineProbe::LocalMachineProbe(QObject* parent) : QObject(parent) {}

void LocalMachineProbe::refresh(const QString& worker, bool hashBuild) {
    const QString previousBuild = m_machine.workerBuild;
    const bool previousKnown = m_machine.buildKnown;
    m_machine = readLocalMachine(worker);
    const int generation = ++m_generation;
    if (!m_machine.workerExists) {
        m_hashedKey.clear();
        emit changed();
        return;
    }
    const QString key = fileKey(QFileInfo(worker));
    if (key == m_hashedKey && previousKnown) {
        m_machine.workerBuild = previousBuild;
        m_machine.buildKnown = true;
        emit changed();
        return;
    }
    m_hashedKey.clear();
    if (!hashBuild) {
        emit changed();
        return;
    }
    auto build = std::make_shared<std::string>();
    QThread* thread = QThread::create([build, path = worker.toStdString()] { *build = workerBuild(path); });
    thread->setObjectName(QStringLiteral("WorkerBuild"));
    ++m_hashing;
    // Queued onto this object's thread, and dropped once this object is gone.
    connect(thread, &QThread::finished, this, [this, build, generation, key] {
        --m_hashing;
        if (generation != m_generation) return; // a later refresh asked again
        m_machine.workerBuild = QString::fromStdString(*build);
        m_machine.buildKnown = true;
        m_hashedKey = key;
        emit changed();
    });
    connect(thread, &QThread::finished, thread, &QObject::deleteLater);
    thread->start();
    emit changed();
}

} // namespace parallax
