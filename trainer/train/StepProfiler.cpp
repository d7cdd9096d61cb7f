#include "trainer/train/StepProfiler.h"

#include "trainer/compat/TorchCompat.h"

namespace parallax {

void StepProfiler::beforeStep(int64_t step) {
    if (step != m_first) return;
    try {
        compat::startProfiler(m_cuda);
        m_active = true;
    } catch (const std::exception& e) {
        m_log.warn(std::string("profiling is not available here: ") + e.what());
    }
}

void StepProfiler::finish() {
    m_active = false;
    const std::string rank = std::to_string(m_rank);
    std::string path = m_out.empty() ? m_runDir + "/profile-rank" + rank + ".json" : m_out;
    // One file per rank: FILE.json becomes FILE-rank<R>.json when several ranks trace.
    if (!m_out.empty() && m_worldSize > 1) {
        const size_t dot = path.rfind('.'), slash = path.rfind('/');
        const size_t at = dot != std::string::npos && (slash == std::string::npos || dot > slash) ? dot : path.size();
        path.insert(at, "-rank" + rank);
    }
    try {
        compat::stopProfiler(path);
        m_log.info("profile of steps " + std::to_string(m_first) + " to " + std::to_string(m_last) + " written to " +
                   path);
    } catch (const std::exception& e) {
        m_log.warn("the profile could not be written to " + path + ": " + e.what());
    }
}

} // namespace parallax
