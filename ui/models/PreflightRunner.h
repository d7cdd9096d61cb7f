#pragma once

#include "core/launch/Preflight.h"

#include <QDateTime>
#include <QObject>
#include <QString>

#include <functional>
#include <string>
#include <vector>

namespace parallax {

// Runs preflight for a cluster profile on a thread of its own: a check over ssh takes seconds (up
// to twice the timeout for a host that does not answer), which the GUI thread must not wait for.
// One check at a time. Destroying the runner while a check goes on drops its result; the thread
// ends by itself when the check does.
class PreflightRunner : public QObject {
    Q_OBJECT
public:
    using Check = std::function<std::vector<HostCheck>(const ClusterProfile&, const PreflightOptions&)>;

    struct Result {
        ClusterProfile profile;
        std::vector<HostCheck> checks;
        std::string localBuild; // the SHA-256 of options.local_worker; "" when there is none
        QString error;          // the check itself failed (not a host's problem)
        double seconds = 0;
        QDateTime finishedAt;
    };

    explicit PreflightRunner(QObject* parent = nullptr);

    // Replaces preflight() (tests); called on the check's thread.
    void setCheck(Check check);

    // Starts a check; false (and nothing happens) while one is running. When options.shared_folder
    // is set it is made first, as the supervisor does before its own preflight.
    bool start(const ClusterProfile& profile, const PreflightOptions& options);
    bool isRunning() const { return m_running; }

signals:
    void finished(const parallax::PreflightRunner::Result& result);

private:
    Check m_check;
    bool m_running = false;
};

} // namespace parallax
