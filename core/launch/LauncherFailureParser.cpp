#include "core/launch/LauncherFailureParser.h"

#include "core/launch/SignalNames.h"

#include <charconv>

namespace parallax {

namespace {

constexpr size_t kMaxBlockLines = 200;
constexpr size_t kMaxBlockBytes = 16 * 1024;
constexpr size_t kMaxLineForMatching = 4096;

bool isDelimiter(std::string_view line) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r'))
        line.remove_suffix(1);
    if (line.size() < 20)
        return false;
    for (char c : line) {
        if (c != '-')
            return false;
    }
    return true;
}

// Appends `line` with runs of whitespace collapsed to one space.
void appendCollapsed(std::string& out, std::string_view line) {
    for (char c : line) {
        const bool space = c == ' ' || c == '\t' || c == '\r' || c == '\n';
        if (space) {
            if (!out.empty() && out.back() != ' ')
                out.push_back(' ');
        } else {
            out.push_back(c);
        }
    }
}

// A tiny cursor over collapsed text.
struct Cursor {
    std::string_view s;

    bool seek(std::string_view literal) { // moves past the first occurrence
        const size_t at = s.find(literal);
        if (at == std::string_view::npos)
            return false;
        s.remove_prefix(at + literal.size());
        return true;
    }
    bool literal(std::string_view lit) {
        if (s.substr(0, lit.size()) != lit)
            return false;
        s.remove_prefix(lit.size());
        return true;
    }
    bool integer(int64_t& out) {
        const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
        if (r.ec != std::errc())
            return false;
        s.remove_prefix(static_cast<size_t>(r.ptr - s.data()));
        return true;
    }
    bool integer(int& out) {
        int64_t v = 0;
        if (!integer(v) || v < -2147483648LL || v > 2147483647LL)
            return false;
        out = static_cast<int>(v);
        return true;
    }
    std::string_view word() { // up to the next space
        const size_t end = std::min(s.find(' '), s.size());
        const std::string_view w = s.substr(0, end);
        s.remove_prefix(end);
        return w;
    }
    std::string_view until(char c) {
        const size_t end = std::min(s.find(c), s.size());
        const std::string_view w = s.substr(0, end);
        s.remove_prefix(end);
        return w;
    }
};

std::optional<LauncherFailure> parseNoticedSignal(std::string_view text) {
    // "... process rank 1 with PID 4242 on node hostA exited on signal 9 (Killed)."
    Cursor c{text};
    LauncherFailure f;
    f.kind = LauncherFailure::Kind::Signal;
    if (!c.seek("noticed that process rank ") || !c.integer(f.rank) || !c.literal(" with PID ") ||
        !c.integer(f.pid) || !c.literal(" on node "))
        return std::nullopt;
    f.host = std::string(c.word());
    if (!c.literal(" exited on signal ") || !c.integer(f.signal))
        return std::nullopt;
    return f;
}

std::optional<LauncherFailure> parseNonZeroStatus(std::string_view text) {
    // "... The first process to do so was: Process name: [[63014,1],1] Exit code: 3"
    Cursor c{text};
    LauncherFailure f;
    f.kind = LauncherFailure::Kind::ExitCode;
    int64_t job = 0;
    int64_t step = 0;
    if (!c.seek("Process name: [[") || !c.integer(job) || !c.literal(",") || !c.integer(step) ||
        !c.literal("],") || !c.integer(f.rank) || !c.literal("]"))
        return std::nullopt;
    Cursor host = c;
    if (host.seek("Local host: "))
        f.host = std::string(host.word());
    int code = 0;
    if (!c.seek("Exit code: ") || !c.integer(code))
        return std::nullopt;
    f.exit_code = code;
    return f;
}

std::optional<LauncherFailure> parseAbort(std::string_view text) {
    // "MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD with errorcode 5."
    Cursor c{text};
    LauncherFailure f;
    f.kind = LauncherFailure::Kind::Abort;
    int code = 0;
    if (!c.seek("MPI_ABORT was invoked on rank ") || !c.integer(f.rank) || !c.seek(" with errorcode ") ||
        !c.integer(code))
        return std::nullopt;
    f.exit_code = code;
    return f;
}

std::optional<LauncherFailure> parseImproper(std::string_view text) {
    // "mpirun has exited due to process rank 1 with PID 0 on node hostA exiting improperly."
    Cursor c{text};
    LauncherFailure f;
    f.kind = LauncherFailure::Kind::ImproperExit;
    if (!c.seek("has exited due to process rank ") || !c.integer(f.rank) || !c.literal(" with PID ") ||
        !c.integer(f.pid) || !c.literal(" on node "))
        return std::nullopt;
    f.host = std::string(c.word());
    if (!c.literal(" exiting improperly"))
        return std::nullopt;
    return f;
}

std::optional<LauncherFailure> parseLaunchError(std::string_view text) {
    // "... could not access or execute an executable: Executable: /x Node: hostA while attempting
    // to start process rank 0."
    Cursor c{text};
    LauncherFailure f;
    f.kind = LauncherFailure::Kind::LaunchError;
    if (!c.seek("could not access or execute an executable:") || !c.seek("Executable: "))
        return std::nullopt;
    f.executable = std::string(c.word());
    if (c.seek("Node: "))
        f.host = std::string(c.word());
    if (c.seek("start process rank "))
        c.integer(f.rank);
    return f;
}

std::optional<LauncherFailure> parseSrun(std::string_view text) {
    // "srun: error: hostA: task 1: Killed" / "srun: error: hostA: tasks 2-3: Exited with exit code 3"
    Cursor c{text};
    if (!c.seek("srun: error: "))
        return std::nullopt;
    LauncherFailure f;
    f.host = std::string(c.until(':'));
    if (!c.literal(": task ") && !c.literal(": tasks "))
        return std::nullopt;
    if (!c.integer(f.rank))
        return std::nullopt;
    c.until(':');
    if (!c.literal(": "))
        return std::nullopt;
    int code = 0;
    Cursor exited = c;
    if (exited.literal("Exited with exit code ") && exited.integer(code)) {
        f.kind = LauncherFailure::Kind::ExitCode;
        f.exit_code = code;
        return f;
    }
    const int sig = signalFromDescription(c.s);
    if (sig == 0)
        return std::nullopt;
    f.kind = LauncherFailure::Kind::Signal;
    f.signal = sig;
    return f;
}

} // namespace

std::optional<LauncherFailure> LauncherFailureParser::parseMessage(std::string_view text) {
    if (text.find("noticed that process rank") != std::string_view::npos)
        return parseNoticedSignal(text);
    if (text.find("Process name: [[") != std::string_view::npos)
        return parseNonZeroStatus(text);
    if (text.find("MPI_ABORT was invoked") != std::string_view::npos)
        return parseAbort(text);
    if (text.find("exiting improperly") != std::string_view::npos)
        return parseImproper(text);
    if (text.find("could not access or execute an executable") != std::string_view::npos)
        return parseLaunchError(text);
    if (text.find("srun: error: ") != std::string_view::npos)
        return parseSrun(text);
    return std::nullopt;
}

namespace {

// ssh's own complaint, passed on by mpirun as an untagged line: "ssh: connect to host node2 port
// 22: Connection refused", "ssh: Could not resolve hostname node2: ...", "root@node2: Permission
// denied (publickey).", "Host key verification failed.".
std::optional<LauncherFailure> sshFailure(std::string_view line) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    LauncherFailure f;
    f.kind = LauncherFailure::Kind::Unreachable;
    f.message = std::string(line);
    Cursor c{line};
    if (c.literal("ssh: connect to host ")) {
        f.host = std::string(c.word());
        return f;
    }
    c = Cursor{line};
    if (c.literal("ssh: Could not resolve hostname ")) {
        f.host = std::string(c.until(':'));
        return f;
    }
    const size_t denied = line.find(": Permission denied");
    if (denied != std::string_view::npos && line.find(' ') > denied) {
        const std::string_view who = line.substr(0, denied);
        const size_t at = who.find('@');
        f.host = std::string(at == std::string_view::npos ? who : who.substr(at + 1));
        return f;
    }
    if (line == "Host key verification failed.") return f;
    return std::nullopt;
}

} // namespace

void LauncherFailureParser::feed(std::string_view line) {
    if (isDelimiter(line)) {
        if (m_inBlock)
            closeBlock();
        else
            m_inBlock = true;
        return;
    }
    if (m_inBlock) {
        if (m_blockLines < kMaxBlockLines && m_block.size() < kMaxBlockBytes) {
            if (!m_block.empty())
                m_block.push_back(' ');
            appendCollapsed(m_block, line.substr(0, kMaxLineForMatching));
            ++m_blockLines;
        }
        return;
    }
    if (m_failure)
        return;
    // ssh's complaint comes before mpirun's "ORTE was unable to reliably start one or more
    // daemons" block, and names the host.
    if (std::optional<LauncherFailure> ssh = sshFailure(line.substr(0, kMaxLineForMatching))) {
        m_failure = std::move(ssh);
        return;
    }
    std::string collapsed;
    appendCollapsed(collapsed, line.substr(0, kMaxLineForMatching));
    m_failure = parseMessage(collapsed);
}

void LauncherFailureParser::closeBlock() {
    if (!m_failure)
        m_failure = parseMessage(m_block);
    m_block.clear();
    m_blockLines = 0;
    m_inBlock = false;
}

void LauncherFailureParser::finish() {
    if (m_inBlock)
        closeBlock();
}

} // namespace parallax
