#include "core/launch/DiskBudget.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace parallax {

namespace fs = std::filesystem;

namespace {

double wallNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int64_t fileBytes(const std::string& path) {
    std::error_code ec;
    const uintmax_t size = fs::file_size(path, ec);
    return ec ? 0 : static_cast<int64_t>(size);
}

std::string gb(int64_t bytes) {
    char text[32];
    if (bytes >= 1000000000)
        std::snprintf(text, sizeof text, "%.2f GB", static_cast<double>(bytes) / 1e9);
    else
        std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
    return text;
}

} // namespace

DiskBudget::DiskBudget(double budgetGb, std::string runDir, std::string storePath, NoticeSink& notices,
                       std::function<void(const RunAlert&)> raise, std::chrono::seconds every)
    : m_budget(budgetGb > 0 ? static_cast<int64_t>(budgetGb * 1e9) : 0), m_runDir(std::move(runDir)),
      m_storePath(std::move(storePath)), m_notices(notices), m_raise(std::move(raise)), m_every(every),
      m_storeAtStart(storeBytes(m_storePath)) {}

int64_t DiskBudget::folderBytes(const std::string& dir) {
    int64_t total = 0;
    std::error_code ec;
    fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        std::error_code entryError;
        if (it->is_regular_file(entryError) && !entryError) total += fileBytes(it->path().string());
    }
    return total;
}

int64_t DiskBudget::storeBytes(const std::string& storePath) {
    if (storePath.empty()) return 0;
    return fileBytes(storePath) + fileBytes(storePath + "-wal") + fileBytes(storePath + "-shm");
}

bool DiskBudget::check(Clock::time_point now) {
    if (m_budget <= 0 || m_raised) return false;
    if (m_measured && now - m_lastCheck < m_every) return false;
    m_measured = true;
    m_lastCheck = now;
    return measure();
}

bool DiskBudget::measure() {
    const int64_t folder = folderBytes(m_runDir);
    const int64_t store = std::max<int64_t>(0, storeBytes(m_storePath) - m_storeAtStart);
    if (folder + store <= m_budget) return false;
    m_raised = true;
    const std::string message =
        "the run's disk use, " + gb(folder + store) + ", is past retention.disk_budget_gb (" + gb(m_budget) +
        "): its folder " + m_runDir + " holds " + gb(folder) + " (output segments, checkpoints) and the store grew " +
        gb(store) + " since it began; free space (remove old checkpoints, lower retention.output_keep_mb), write "
        "less telemetry (telemetry.device_sample_ms, span_every), or raise the budget";
    m_notices.notice(LogLevel::Warn, "disk budget: " + message);
    RunAlert a;
    a.kind = AlertKind::DiskBudget;
    a.message = message;
    a.active = true;
    a.t = wallNow();
    m_raise(a);
    return true;
}

} // namespace parallax
