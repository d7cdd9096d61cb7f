#pragma once

#include "core/spec/RunSpec.h"

#include <QMainWindow>
#include <QSet>
#include <QPointer>
#include <QString>

#include <optional>

class QLabel;
class QListWidget;
class QSplitter;
class QStackedWidget;

namespace parallax {

class RunLauncher;

class ClusterPage;
class ComparePage;
class DocumentDialog;
class LivePage;
class LogsPage;
class NewRunPage;
class PipelinePage;
class RunListModel;
class RunsPage;
class RunStoreThread;
class StoreWatcher;

// The console's window: a navigation list on the left (New run, Live, Logs, Pipeline, Runs, Compare, Cluster), the
// page on the right, the store and the number of running runs in the status bar. It owns the store
// watcher that every page reads through, and remembers its geometry, layout and splitters. Opened
// on a store where a run is going, it shows that run on the Live page. Help shows the guide and
// the spec reference compiled into the console, and its version.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    enum Page { NewRun, Live, Logs, Pipeline, Runs, Compare, Cluster, PageCount };

    explicit MainWindow(const QString& storePath, QWidget* parent = nullptr);
    ~MainWindow() override;

    // Switches every page to another store (created when missing).
    void openStore(const QString& path);
    QString storePath() const { return m_storePath; }

    // The parallax-cli the console runs (Live's Stop and Resume, New run's Launch, following Slurm
    // batch jobs); default: beside the console.
    void setCliPath(const QString& path);
    void showPage(Page page);
    Page currentPage() const;
    // Shows the run on the Live page (and makes it the Logs and Pipeline pages' run).
    void openRun(qint64 id);
    // Opens the stored spec of a run in the New run form, to change and launch again.
    void editRunSpec(qint64 id);
    // Opens it to continue from its checkpoint with the spec changed (Resume with changes).
    void resumeWithChanges(qint64 id);
    int runningCount() const;

    NewRunPage* newRunPage() const { return m_newRun; }
    LivePage* livePage() const { return m_live; }
    LogsPage* logsPage() const { return m_logs; }
    PipelinePage* pipelinePage() const { return m_pipeline; }
    RunsPage* runsPage() const { return m_runsPage; }
    ComparePage* comparePage() const { return m_compare; }
    ClusterPage* clusterPage() const { return m_cluster; }
    StoreWatcher* watcher() const;
    RunListModel* runsModel() const { return m_runs; }
    QWidget* page(Page page) const;

    // Help: a document of docs/ ("guide.md", "spec.md") in the window's document dialog.
    void showDocument(const QString& name);
    DocumentDialog* documentDialog() const;
    // What Help > About says: the console's version and build id, Qt's version, the store.
    QString aboutText() const;

    // The window's state in QSettings: geometry, toolbars, splitters and page for every store; the
    // store's own pages (Compare's splitters, Runs' columns) and its last spec apart per store.
    void saveSettings() const;
    void restoreSettings();
    // Within the available area of the screen the window is on, its frame included.
    void fitToScreen();
    // The spec last opened or saved in the New run form on this store (empty: none).
    QString lastSpecOfStore() const;

protected:
    void closeEvent(QCloseEvent* event) override;
    void showEvent(QShowEvent* event) override;

private:
    // The stored spec of run `id`, or nullopt with the reason in the status bar.
    std::optional<RunSpec> storedSpec(qint64 id);
    void buildMenus();
    void buildNavigation();
    void createStorePages();
    // createStorePages()'s parts: the follower of Slurm batch jobs nobody follows, and the wiring
    // of the store's pages to the watcher, the writer, the status bar and each other.
    void createBatchFollower();
    void connectStorePages();
    void destroyStorePages();
    void updateStatus();
    void openStoreDialog();
    void restoreStorePageSettings();
    // The key of a setting kept apart per store: "stores/<digest of the store's path>/<key>".
    QString storeSettingsKey(const char* key) const;
    // Loads lastSpecOfStore() into the New run form (at start; a --spec given to the console wins).
    void openLastSpec();

    QString m_storePath;
    QPointer<StoreWatcher> m_watcher;
    QPointer<RunStoreThread> m_writer;
    RunListModel* m_runs = nullptr;
    // The first runs list was seen (or a run opened): the window has landed on its page.
    bool m_pickedLiveRun = false;
    bool m_fittedShown = false; // fitted to the screen with its frame, at the first show
    RunLauncher* m_attacher = nullptr;  // follows Slurm batch jobs nobody follows
    QString m_cliPath;                  // set by setCliPath; empty: beside the console
    QSet<qint64> m_attached;             // runs it was started for
    QPointer<DocumentDialog> m_document;

    QSplitter* m_splitter = nullptr;
    QListWidget* m_nav = nullptr;
    QStackedWidget* m_stack = nullptr;
    NewRunPage* m_newRun = nullptr;
    LivePage* m_live = nullptr;
    LogsPage* m_logs = nullptr;
    PipelinePage* m_pipeline = nullptr;
    RunsPage* m_runsPage = nullptr;
    ComparePage* m_compare = nullptr;
    ClusterPage* m_cluster = nullptr;
    QLabel* m_storeLabel = nullptr;
    QLabel* m_runningLabel = nullptr;
};

} // namespace parallax
