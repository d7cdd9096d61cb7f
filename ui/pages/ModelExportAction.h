#pragma once

#include "ui/models/ModelExportRunner.h"
#include "ui/models/RunOrigin.h"
#include "ui/pages/ModelExportDialog.h"

#include <QObject>
#include <QPointer>
#include <QString>

#include <functional>
#include <map>
#include <optional>

class QLabel;
class QPushButton;
class QWidget;

namespace parallax {

class RunListModel;
class StoreWatcher;

// The Runs page's Export…: the selected run's checkpoint written as a published model's folder
// (a Hugging Face folder; a diffusers transformer folder for qwen_image), LoRA merged, or a LoRA
// run's adapter alone, by parallax-cli export (ModelExportRunner). Offered for runs of a published
// kind started from model.from that have a checkpoint (the store's checkpoints of the run, read on
// the watcher's thread); otherwise the button is off and its tooltip says why. Its progress lines,
// and then the result or the error, show in its status label and as status messages.
class ModelExportAction : public QObject {
    Q_OBJECT
public:
    // Asks where to write and what; nullopt: cancelled. Unless set, ModelExportDialog asks.
    using AskChoice = std::function<std::optional<ModelExportChoice>(const ModelExportRequest& request)>;

    ModelExportAction(RunListModel* runs, StoreWatcher* watcher, QWidget* parent);

    QPushButton* button() const { return m_button; }
    QLabel* statusLabel() const { return m_status; }
    ModelExportRunner* runner() const { return m_runner; }
    void setStorePath(const QString& path);
    void setAskChoice(AskChoice ask) { m_ask = std::move(ask); }

    // The selected run (0: none): the button's state and tooltip follow it.
    void setRun(qint64 id);
    ModelExportCheck check() const;

    // Asks where and what for the selected run, then exports.
    void trigger();
    // Starts parallax-cli export of run `id` into `folder`; false (and why) when it cannot start.
    bool exportRun(qint64 id, const ModelExportChoice& choice, QString* error = nullptr);

signals:
    void statusMessage(const QString& message);

private:
    // The run's checkpoints as the store had them when its steps and state were these.
    struct Checkpoints {
        int64_t lastStep = -1;
        RunState state = RunState::Queued;
        int64_t count = 0;
    };
    std::optional<int64_t> knownCheckpoints(const RunRecord& r) const;
    void readCheckpoints(const RunRecord& r);
    void update();
    void showStatus(const QString& text, bool failed = false);

    RunListModel* m_runs;
    QPointer<StoreWatcher> m_watcher;
    QWidget* m_parent;
    ModelExportRunner* m_runner;
    QPushButton* m_button;
    QLabel* m_status;
    QString m_tip;
    AskChoice m_ask;
    qint64 m_run = 0;
    std::map<qint64, Checkpoints> m_checkpoints;
    qint64 m_reading = 0; // the run whose checkpoints are being read (0: none)
};

} // namespace parallax
