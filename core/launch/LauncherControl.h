#pragma once

#include "core/launch/LaunchControl.h"
#include "core/launch/LauncherProcess.h"

#include <string>

namespace parallax {

// The launcher here (mpirun, srun) as a stop reaches it: signals go to the launcher, which passes
// them on to the ranks; a kill reaches every process of its session. Counts the processes killed
// that outlived the launcher, for the run's log.
class LauncherControl : public LaunchControl {
public:
    LauncherControl(LauncherProcess& launcher, std::string name) : m_launcher(launcher), m_name(std::move(name)) {}

    bool launched() const override { return m_launcher.pid() > 0; }
    bool queued() const override { return false; }
    std::string name() const override { return m_name; }
    void signalRanks(int signal) override { m_launcher.signal(signal); }
    void terminate() override;
    void killRanks() override { killAll(); }
    void killAll() override { m_killed += m_launcher.killAll(); }

    // Processes a kill reached (the launcher's own and any it left).
    int killed() const { return m_killed; }

private:
    LauncherProcess& m_launcher;
    std::string m_name;
    int m_killed = 0;
};

} // namespace parallax
