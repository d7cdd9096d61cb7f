#pragma once

#include <QObject>
#include <QPointer>

#include <cstdint>
#include <optional>

namespace parallax {

class DeviceGridModel;
class StoreWatcher;

// Looks further back than the window a run was opened at (StoreWatcher reads a run's last
// kOpenWindowSeconds of device samples and its last kOpenRankSteps steps): each loadEarlier() asks
// the watcher for the window before the oldest asked for or held, of each kind the model holds,
// and adds what comes back to the model (DeviceGridModel::addOlderSamples, addOlderRankSteps),
// whose histories stay bounded. Earlier requests stop at the run's beginning: its creation time
// and its first step (run_start's start_step for a resumed run). The run's history sent again
// (a reset) starts over from its new window; answers to requests made before it are dropped.
class DeviceHistoryLoader : public QObject {
    Q_OBJECT
public:
    DeviceHistoryLoader(StoreWatcher* watcher, DeviceGridModel* model, QObject* parent = nullptr);

    // The run the model shows (0: none); forgets what was asked for.
    void setRun(qint64 run);
    qint64 run() const { return m_run; }
    // Whether there is an earlier window to ask for and no request is under way.
    bool canLoadEarlier() const;
    void loadEarlier();

signals:
    // canLoadEarlier() may have changed.
    void changed();

private:
    std::optional<double> timeFrom() const;   // the oldest time asked for or held
    std::optional<int64_t> stepFrom() const;  // the oldest step asked for or held

    QPointer<StoreWatcher> m_watcher;
    QPointer<DeviceGridModel> m_model;
    qint64 m_run = 0;
    double m_floorT = 0;      // the run's creation time
    int64_t m_floorStep = 0;  // its first step
    std::optional<double> m_fromT;      // the lower bound of the last answer taken
    std::optional<int64_t> m_fromStep;
    std::optional<double> m_askedT;     // the lower bound of the request under way
    std::optional<int64_t> m_askedStep;
};

} // namespace parallax
