#include "core/launch/HostSweep.h"

#include <cstdlib>
#include <sstream>

namespace parallax {

namespace {

// Runs with the run folders as its arguments. One grep reads every /proc/N/cmdline (arguments are
// its NUL-terminated lines: -z, a whole one: -x) and lists the processes that have a run folder or
// the marker as an argument; a second drops those with the marker (this sweep's own: sh, flock,
// timeout, grep). A process that ends while grep reads it is an error grep keeps to itself (-s).
// The parent of each is read with the shell's own `read` (stderr sent away before the file is
// opened, so that a process gone meanwhile says nothing).
constexpr const char* kSweepScript = R"SH(n=$#
for d in "$@"; do set -- "$@" -e "$d"; done
shift $n
files=$(grep -lsFxz -e @px-sweep "$@" /proc/[0-9]*/cmdline)
victims=" "
if [ -n "$files" ]; then
  for f in $(grep -LsFxz -e @px-sweep $files); do
    p=${f#/proc/}; p=${p%/cmdline}
    case "$victims" in *" $p "*) continue;; esac
    victims="$victims$p "
    line=""; read -r line 2>/dev/null < "/proc/$p/stat"
    set -- ${line##*) }
    comm=""; [ -n "$2" ] && read -r comm 2>/dev/null < "/proc/$2/comm"
    case "$comm:$victims" in orted:*" $2 "*|prted:*" $2 "*) ;; orted:*|prted:*) victims="$victims$2 ";; esac
  done
fi
n=0
for v in $victims; do kill -TERM "$v" 2>/dev/null && n=$((n+1)); done
if [ "$n" -gt 0 ]; then sleep 2; for v in $victims; do kill -KILL "$v" 2>/dev/null; done; fi
echo "@px ended $n"
)SH";

constexpr const char* kResult = "@px ended ";

std::string lastLine(const std::string& text) {
    std::string last;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) last = line;
    return last;
}

} // namespace

std::vector<std::string> sweepCommand(const std::vector<std::string>& runDirs) {
    // One sweep at a time on the host, whoever started it (a lock in the host's own /tmp, named
    // after it: test hosts share one /tmp), bounded by `timeout` there. The marker is an argument
    // of every process of the sweep (sh, flock, timeout), so that it never matches itself.
    const std::string outer = "exec flock -n -E " + std::to_string(kSweepBusyCode) +
                              " \"/tmp/parallax-sweep-$(cat /proc/sys/kernel/hostname).lock\" timeout -k 2 " +
                              std::to_string(kSweepLimitThere.count()) + " sh -c \"$0\" @px-sweep \"$@\"";
    std::vector<std::string> argv = {"sh", "-c", outer, kSweepScript};
    argv.insert(argv.end(), runDirs.begin(), runDirs.end());
    return argv;
}

SweepOutcome readSweep(const CommandResult& r, std::chrono::milliseconds timeout) {
    SweepOutcome o;
    const size_t at = r.out.rfind(kResult);
    if (at != std::string::npos) {
        o.kind = SweepOutcome::Kind::Swept;
        o.ended = std::atoll(r.out.c_str() + at + std::char_traits<char>::length(kResult));
        return o;
    }
    const std::string said = lastLine(r.err);
    if (r.exit_code == kSweepBusyCode) {
        o.kind = SweepOutcome::Kind::Failed;
        o.error = "another sweep is running there";
    } else if (!r.start_error.empty()) {
        o.error = r.start_error;
    } else if (r.timed_out && r.out.empty()) {
        o.error = "no answer over ssh within " + std::to_string(timeout.count() / 1000) + " s";
    } else if (r.exit_code == 255) {
        o.error = said.empty() ? std::string("ssh could not reach it (exit code 255)") : said;
    } else {
        o.kind = SweepOutcome::Kind::Failed;
        o.error = "it answered, but the sweep did not finish (" +
                  (r.timed_out ? "cut off after " + std::to_string(timeout.count() / 1000) + " s"
                               : "exit code " + std::to_string(r.exit_code)) +
                  (said.empty() ? std::string() : ": " + said) + ")";
    }
    return o;
}

} // namespace parallax
