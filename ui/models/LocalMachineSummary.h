#pragma once

#include "core/spec/MachineInfo.h"

#include <QDateTime>
#include <QObject>
#include <QString>
#include <QStringList>

namespace parallax {

// This machine as a run with launch.target = "local" finds it: what thisMachine() reports, the
// worker the console would launch, and the MPI launcher on PATH.
struct LocalMachine {
    QString hostName;
    MachineInfo machine;
    QString worker;         // the parallax-worker path the console launches
    bool workerExists = false;
    QString workerBuild;    // its SHA-256; empty while computing or when it cannot be read
    bool buildKnown = false; // the SHA-256 was computed (workerBuild empty: it could not be read)
    QString mpirun;         // mpirun's path from PATH; empty: not found

    // The title of its entry, and what its Hosts column says.
    static QString title();
    static QString targetText();
    // Host name, cores, memory, GPUs, worker, launcher and the local launch, one per line.
    QString details() const;
    // What stops a local run here, each with its fix; empty when nothing does.
    QStringList problems() const;
    // One line for the page's status.
    QString status() const;
};

// Reads everything but the worker's build at once (a few file reads and PATH lookups).
LocalMachine readLocalMachine(const QString& worker);

// Keeps a LocalMachine current: refresh() reads it again and computes the worker's SHA-256 on a
// thread of its own (sha256sum of a large executable takes a while), once per version of the
// file (its size and time of change). `changed` says when machine() has more to show.
class LocalMachineProbe : public QObject {
    Q_OBJECT
public:
    explicit LocalMachineProbe(QObject* parent = nullptr);

    // Reads the quick facts again; with `hashBuild`, the worker's build too (on a thread of its
    // own) unless the same file was hashed already. Without, the build stays unknown.
    void refresh(const QString& worker, bool hashBuild = true);
    const LocalMachine& machine() const { return m_machine; }
    bool isHashing() const { return m_hashing > 0; }

signals:
    void changed();

private:
    LocalMachine m_machine;
    QString m_hashedKey; // path, size and time of the file whose build m_machine holds
    int m_generation = 0;
    int m_hashing = 0;
};

} // namespace parallax
