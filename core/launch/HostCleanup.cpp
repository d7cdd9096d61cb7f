#include "core/launch/HostCleanup.h"

#include "core/launch/CommandRun.h"
#include "core/launch/Ssh.h"
#include "core/spec/SpecIO.h"

#include <map>
#include <sstream>

namespace parallax {

namespace {

// Runs on the host with the run folder as $1: finds the processes whose command line has that
// folder as one of its arguments, adds their parent when it is Open MPI's orted, ends them, and
// says how many there were.
constexpr const char* kEndScript =
    "dir=\"$1\"; victims=\"\"; "
    "for p in /proc/[0-9]*; do "
    "  pid=${p#/proc/}; [ \"$pid\" = \"$$\" ] && continue; "
    "  if tr '\\000' '\\n' < \"$p/cmdline\" 2>/dev/null | grep -qxF -- \"$dir\"; then "
    "    victims=\"$victims $pid\"; "
    "    ppid=$(sed 's/.*) [A-Za-z] \\([0-9]*\\).*/\\1/' \"$p/stat\" 2>/dev/null); "
    "    [ -n \"$ppid\" ] && [ \"$(cat /proc/$ppid/comm 2>/dev/null)\" = orted ] && victims=\"$victims $ppid\"; "
    "  fi; "
    "done; "
    "n=0; for v in $victims; do kill -TERM \"$v\" 2>/dev/null && n=$((n+1)); done; "
    "if [ -n \"$victims\" ]; then sleep 2; for v in $victims; do kill -KILL \"$v\" 2>/dev/null; done; fi; "
    "echo \"@px ended $n\"";

std::string lastLine(const std::string& text) {
    std::string last;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) last = line;
    return last;
}

} // namespace

std::vector<HostCleanupResult> cleanUpHosts(const std::vector<std::string>& hosts, const SshSettings& ssh,
                                            const std::string& runDir, std::chrono::milliseconds timeout) {
    std::vector<std::vector<std::string>> commands;
    for (const std::string& host : hosts) commands.push_back(sshCommand(host, ssh, {"sh", "-c", kEndScript, "end", runDir}));
    const std::vector<CommandResult> results = runCommands(commands, timeout);
    std::vector<HostCleanupResult> out;
    for (size_t i = 0; i < hosts.size(); ++i) {
        HostCleanupResult h;
        h.host = hosts[i];
        const CommandResult& r = results[i];
        const size_t at = r.out.find("@px ended ");
        if (r.exit_code == 0 && at != std::string::npos) {
            h.reached = true;
            h.ended = std::atoll(r.out.c_str() + at + 10);
        } else if (r.timed_out) {
            h.error = "no answer over ssh within " + std::to_string(timeout.count() / 1000) + " s";
        } else {
            h.error = r.start_error.empty() ? lastLine(r.err) : r.start_error;
            if (h.error.empty()) h.error = "ssh ended with code " + std::to_string(r.exit_code);
        }
        out.push_back(h);
    }
    return out;
}

std::vector<std::string> retryPendingCleanups(RunStore& store) {
    std::vector<std::string> said;
    // One ssh round for all hosts of one run (they share the run folder and the profile).
    std::map<int64_t, std::vector<PendingCleanup>> byRun;
    for (const PendingCleanup& c : store.pendingCleanups()) byRun[c.run].push_back(c);
    for (const auto& [run, pending] : byRun) {
        SshSettings ssh;
        if (const std::optional<RunRecord> record = store.run(run)) {
            try {
                ssh = resolveHosts(parseSpec(record->spec_toml, "run " + std::to_string(run))).ssh;
            } catch (const std::exception&) {
                // The profile is gone or changed: ssh's own settings may still reach the host.
            }
        }
        std::vector<std::string> hosts;
        for (const PendingCleanup& c : pending) hosts.push_back(c.host);
        const std::vector<HostCleanupResult> results = cleanUpHosts(hosts, ssh, pending.front().run_dir);
        for (const HostCleanupResult& r : results) {
            if (r.reached) {
                store.removePendingCleanup(run, r.host);
                said.push_back("run " + std::to_string(run) + ": " + r.host + " answers again; " +
                               std::to_string(r.ended) + " process(es) of the run ended there");
            } else {
                store.notePendingCleanupAttempt(run, r.host, r.error);
                said.push_back("run " + std::to_string(run) + ": " + r.host + " still does not answer (" + r.error +
                               "); its cleanup stays due");
            }
        }
    }
    return said;
}

} // namespace parallax
