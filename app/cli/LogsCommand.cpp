#include "app/cli/CliError.h"
#include "app/cli/Commands.h"
#include "app/cli/Format.h"
#include "core/launch/Utf8.h"
#include "core/store/LogLevel.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

namespace parallax {

namespace {

void printRow(const LogRow& row) {
    std::string who;
    if (row.rank >= 0)
        who = "r" + std::to_string(row.rank);
    else
        who = row.stream == "supervisor" ? "sup" : "mpi";
    static const char* const kLetters[] = {"D", "I", "W", "E"}; // by LogLevel
    const char* level = kLetters[row.level];
    std::printf("%s %-4s %s %s\n", formatClock(row.t).c_str(), who.c_str(), level, terminalSafe(row.message).c_str());
}

} // namespace

int logsCommand(const std::string& storePath, const LogsCommandOptions& o) {
    static const char* levels[] = {"debug", "info", "warn", "error"};
    if (!o.level.empty() && std::find(std::begin(levels), std::end(levels), o.level) == std::end(levels))
        throw CliError("--level " + o.level + " is not one of debug, info, warn, error", ExitCode::Usage);
    RunStore store(storePath);
    const RunRecord run = requireRun(store, o.run);

    LogQuery q;
    q.ranks = o.ranks;
    q.min_level = o.level;
    q.match = o.grep;
    int64_t last = 0;
    if (o.tail >= 0) {
        LogQuery tail = q;
        tail.descending = true;
        tail.limit = o.tail;
        std::vector<LogRow> rows = store.logs(run.id, tail);
        std::reverse(rows.begin(), rows.end());
        for (const LogRow& r : rows)
            printRow(r);
        if (!rows.empty())
            last = rows.back().id; // else nothing matches yet: follow from the start
        if (!o.follow)
            return 0;
    }
    constexpr int64_t kPage = 5000;
    auto drain = [&] {
        size_t printed = 0;
        for (;;) {
            LogQuery page = q;
            page.after_id = last;
            page.limit = kPage;
            const std::vector<LogRow> rows = store.logs(run.id, page);
            for (const LogRow& r : rows)
                printRow(r);
            printed += rows.size();
            if (!rows.empty())
                last = rows.back().id;
            if (static_cast<int64_t>(rows.size()) < kPage)
                return printed;
        }
    };
    drain();
    if (!o.follow)
        return 0;
    std::fflush(stdout);

    // Follow: poll the store's data version (cheap) until the run ends.
    const std::string host = thisHost();
    auto lastLivenessCheck = std::chrono::steady_clock::now();
    for (;;) {
        const std::optional<RunRecord> now = store.run(run.id);
        if (!now || isTerminal(now->state)) {
            drain();
            if (now)
                std::fprintf(stderr, "parallax: run %lld %s%s%s\n", static_cast<long long>(now->id), runStateName(now->state).c_str(),
                             now->exit_reason.empty() ? "" : ": ", now->exit_reason.c_str());
            return now ? exitCodeForState(now->state) : ExitCode::Error;
        }
        const int64_t version = store.dataVersion();
        for (int i = 0; i < 20 && store.dataVersion() == version; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (drain() > 0)
            std::fflush(stdout);
        if (std::chrono::steady_clock::now() - lastLivenessCheck > std::chrono::seconds(5)) {
            lastLivenessCheck = std::chrono::steady_clock::now();
            store.markLostRuns(host, pidAlive); // a supervisor that died must not keep us waiting
        }
    }
}

} // namespace parallax
