#include "core/launch/LauncherControl.h"

#include <csignal>

namespace parallax {

void LauncherControl::terminate() { m_launcher.signal(SIGTERM); }

} // namespace parallax
