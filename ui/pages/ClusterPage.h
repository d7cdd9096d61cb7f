#pragma once

#include "ui/models/PreflightRunner.h"

#include <QString>
#include <QWidget>

#include <map>
#include <string>
#include <vector>

class QGroupBox;
class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QShowEvent;
class QSplitter;
class QTableView;

class QPainter;
class QColor;

namespace parallax {

class ClusterHostsModel;
class ClusterProfileListModel;
class LocalMachineProbe;
class SlurmPartitionsModel;

// The cluster profiles this console finds (with the folder each came from, and the error of one
// that cannot be read) and, for the selected one, its hosts as preflight sees them: reachable,
// latency, cores, GPUs and their memory, whether the worker there is this machine's build, load,
// Parallax ranks running there and every problem with its fix. The first entry is this machine
// (launch.target = "local"): its cores, memory, worker and its build (hashed on a thread of its
// own), and mpirun. Test connection runs preflight on a thread of its own; the table says
// "checking…" meanwhile.
class ClusterPage : public QWidget {
    Q_OBJECT
public:
    // Its icon in the navigation (two machines in a rack, each with its status light), on PageIcons' 24 x 24 grid with the pen set.
    static void paintIcon(QPainter& p, const QColor& color);
    explicit ClusterPage(QWidget* parent = nullptr);

    // The store whose run folders (RunFolders::rootFor) the hosts must share; none: not checked.
    void setStorePath(const QString& path);
    // The worker whose build the hosts must have. Default: $PARALLAX_WORKER, else parallax-worker
    // beside the console.
    void setLocalWorker(const QString& path);
    QString localWorker() const { return m_localWorker; }
    // Seconds each host has to answer (preflight's timeout).
    void setCheckTimeout(int seconds) { m_timeoutS = seconds; }

    ClusterProfileListModel* profilesModel() const { return m_profiles; }
    ClusterHostsModel* hostsModel() const { return m_hosts; }
    QTableView* profilesView() const { return m_profileView; }
    QTableView* hostsView() const { return m_hostView; }
    QPushButton* testButton() const { return m_test; }
    PreflightRunner* runner() const { return m_runner; }
    LocalMachineProbe* localMachine() const { return m_local; }
    // What the details area shows for the selected entry.
    QString detailsText() const;
    QSplitter* splitter() const { return m_splitter; }
    SlurmPartitionsModel* slurmPartitionsModel() const { return m_slurm; }
    QTableView* slurmPartitionsView() const { return m_slurmView; }
    QLabel* slurmStatusLabel() const { return m_slurmStatus; }

    // Reads the profile folders again, keeping the selection where the profile is still there.
    void reloadProfiles();
    bool selectProfile(const QString& path);
    QString currentProfilePath() const;

    bool isChecking() const;
    QString statusText() const;
    // Every problem and note of the shown check, one per line.
    QString problemsText() const;

    // Writes a copy of the example profile (resources/clusters/example.toml) as <name>.toml in the
    // first profile folder and selects it. Returns its path, or "" with the reason in `error`.
    QString createProfile(const QString& name, QString* error);

public slots:
    void testConnection();
    // Asks Slurm for its partitions again (also each time the page is shown).
    void refreshSlurm();
    void newProfileDialog();
    void openProfileFolder();

signals:
    // A profile was written here (the New run page's list of profiles changes).
    void profilesChanged();
    void statusMessage(const QString& message);

protected:
    void showEvent(QShowEvent* event) override;

private:
    // The constructor's parts: the profile list with its buttons, the selected profile's hosts,
    // and the Slurm partitions under both.
    QWidget* buildProfilePanel();
    QWidget* buildHostPanel();
    QGroupBox* buildSlurmBox();
    void showProfile();
    void onFinished(const PreflightRunner::Result& result);
    void showResult(const PreflightRunner::Result& result);
    void refreshStatus();

    ClusterProfileListModel* m_profiles = nullptr;
    ClusterHostsModel* m_hosts = nullptr;
    PreflightRunner* m_runner = nullptr;
    LocalMachineProbe* m_local = nullptr;
    SlurmPartitionsModel* m_slurm = nullptr;
    QTableView* m_slurmView = nullptr;
    QPushButton* m_slurmRefresh = nullptr;
    QLabel* m_slurmStatus = nullptr;
    QString m_storePath;
    QString m_localWorker;
    int m_timeoutS = 5;
    QString m_checkingPath; // the profile being checked
    std::map<QString, PreflightRunner::Result> m_results; // by profile path: the last check
    QString m_status;

    QSplitter* m_splitter = nullptr;
    QTableView* m_profileView = nullptr;
    QLabel* m_folders = nullptr;
    QPushButton* m_newProfile = nullptr;
    QPushButton* m_openFolder = nullptr;
    QPushButton* m_reload = nullptr;
    QLabel* m_title = nullptr;
    QLabel* m_details = nullptr;
    QPushButton* m_test = nullptr;
    QProgressBar* m_busy = nullptr;
    QLabel* m_statusLabel = nullptr;
    QTableView* m_hostView = nullptr;
    QPlainTextEdit* m_problems = nullptr;
};

} // namespace parallax
