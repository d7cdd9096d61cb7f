#include "tests/support/TestHosts.h"

#include "core/util/FileWriter.h"
#include "core/util/Files.h"

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <netinet/in.h>
#include <optional>
#include <poll.h>
#include <sched.h>
#include <sstream>
#include <stdexcept>
#include <sys/mount.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace parallax::testing {

namespace {

// Every name a fixture makes starts with "pxt<pid>s<seq>", so that a later fixture can tell the
// leftovers of a process that died (a test binary killed mid-test) from those of a live one.
constexpr const char* kPrefix = "pxt";
// The fixture's folder lies in /tmp whatever TMPDIR says: mpirun splits plm_rsh_args at spaces, so
// the ssh config's path must have none.
constexpr const char* kFolderParent = "/tmp";
constexpr const char* kFolderPrefix = "parallax-hosts-";
constexpr const char* kSshd = "/usr/sbin/sshd";
// mpirun looks every host name up (getaddrinfo) although ssh reaches them by the ssh config's
// addresses; without entries here each lookup would go to the machine's DNS resolver. Each line
// this fixture adds ends with the marker and the fixture's base name.
constexpr const char* kHostsFile = "/etc/hosts";
constexpr const char* kHostsMarker = "# parallax-test-hosts ";
// The new /etc/hosts is written to /etc/<this><base-like name> first.
constexpr const char* kHostsTemporaryPrefix = ".hosts.";

std::atomic<unsigned> g_sequence{0};

std::string findProgram(const std::string& name) {
    std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
    // Where Debian puts ip, tc and sshd, for a PATH without the sbin folders.
    path += ":/usr/sbin:/sbin";
    std::istringstream folders(path);
    std::string folder;
    while (std::getline(folders, folder, ':')) {
        if (folder.empty())
            continue;
        const std::string candidate = folder + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0)
            return candidate;
    }
    return {};
}

const std::string& program(const std::string& name) {
    static const std::string ip = findProgram("ip"), ssh = findProgram("ssh"), keygen = findProgram("ssh-keygen"),
                             tc = findProgram("tc");
    static const std::string none;
    if (name == "ip") return ip;
    if (name == "ssh") return ssh;
    if (name == "ssh-keygen") return keygen;
    if (name == "tc") return tc;
    return none;
}

// argv as one line for the remote shell that ssh hands its command to: every argument in single
// quotes, so that the shell splits and expands nothing.
std::string remoteCommand(const std::vector<std::string>& argv) {
    std::string line;
    for (const std::string& a : argv) {
        line += line.empty() ? "'" : " '";
        for (char c : a)
            line += c == '\'' ? std::string("'\\''") : std::string(1, c);
        line += "'";
    }
    return line;
}

// Runs argv; throws naming `what` and the command's output when it fails.
std::string must(const std::vector<std::string>& argv, const std::string& what) {
    const ProcessResult r = runProcess(argv);
    if (r.exitCode != 0)
        throw std::runtime_error("test hosts: " + what + " failed (" + remoteCommand(argv) + ", exit code " +
                                 std::to_string(r.exitCode) + "): " + r.output);
    return r.output;
}

// Runs argv where failing is fine (removing what may already be gone).
void quietly(const std::vector<std::string>& argv) {
    try {
        runProcess(argv);
    } catch (const std::exception&) {
        // A helper that cannot even start leaves nothing to remove either.
    }
}

bool processAlive(pid_t pid) {
    return ::kill(pid, 0) == 0 || errno == EPERM;
}

// The pid in a name "pxt<pid>s<seq>..." of some fixture; nullopt for other names.
std::optional<pid_t> creatorOf(const std::string& name) {
    if (name.rfind(kPrefix, 0) != 0)
        return std::nullopt;
    size_t at = std::strlen(kPrefix);
    size_t end = at;
    while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end])))
        ++end;
    if (end == at || end - at > 9 || end >= name.size() || name[end] != 's')
        return std::nullopt;
    return static_cast<pid_t>(std::stol(name.substr(at, end - at)));
}

bool leftoverOfDeadProcess(const std::string& name) {
    const std::optional<pid_t> pid = creatorOf(name);
    return pid && *pid != ::getpid() && !processAlive(*pid);
}

std::vector<pid_t> namespacePids(const std::string& ns) {
    const ProcessResult r = runProcess({program("ip"), "netns", "pids", ns});
    std::vector<pid_t> pids;
    if (r.exitCode != 0)
        return pids;
    std::istringstream in(r.output);
    long pid = 0;
    while (in >> pid)
        pids.push_back(static_cast<pid_t>(pid));
    return pids;
}

// SIGKILLs everything in namespace `ns` until nothing is left there (a process may fork while the
// first kills go out); gives up after 10 s.
void killNamespace(const std::string& ns) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
        const std::vector<pid_t> pids = namespacePids(ns);
        if (pids.empty() || std::chrono::steady_clock::now() > end)
            return;
        for (pid_t pid : pids)
            ::kill(pid, SIGKILL);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

std::vector<std::string> namespaceNames() {
    std::vector<std::string> out;
    const ProcessResult r = runProcess({program("ip"), "netns", "list"});
    std::istringstream in(r.output);
    std::string line;
    while (std::getline(in, line)) {
        // "NAME (id: 3)" or "NAME"
        const std::string name = line.substr(0, line.find(' '));
        if (!name.empty())
            out.push_back(name);
    }
    return out;
}

std::vector<std::string> linkNames() {
    std::vector<std::string> out;
    const ProcessResult r = runProcess({program("ip"), "-o", "link", "show"});
    std::istringstream in(r.output);
    std::string line;
    while (std::getline(in, line)) {
        // "12: NAME@if11: <BROADCAST,...> ..." or "3: NAME: <...>"
        const size_t colon = line.find(": ");
        if (colon == std::string::npos)
            continue;
        const size_t start = colon + 2;
        const size_t end = line.find_first_of("@:", start);
        if (end != std::string::npos)
            out.push_back(line.substr(start, end - start));
    }
    return out;
}

// The fixture base name a line of /etc/hosts was added for, or "" for the machine's own lines.
std::string hostsLineOwner(const std::string& line) {
    const size_t at = line.find(kHostsMarker);
    if (at == std::string::npos)
        return "";
    std::string owner = line.substr(at + std::strlen(kHostsMarker));
    while (!owner.empty() && std::isspace(static_cast<unsigned char>(owner.back())))
        owner.pop_back();
    return owner;
}

// Writes `text` to `path` (created or truncated), checking every call.
void writeChecked(const std::string& path, const std::string& text) {
    FileWriter out(path);
    out.write(text.data(), text.size());
    if (!out.finish())
        throw std::runtime_error("test hosts: " + out.describe(path));
}

// Replaces /etc/hosts with edit(its text). Fixtures of other test binaries edit it too: the lock
// is on the folder /etc (flock works on a folder, and the file's own inode changes with every
// rename). The new text is renamed over the file, so that a program reading it at that moment
// sees the old lines or the new ones, never half; where /etc/hosts is a mount of its own (a
// container's), it is rewritten in place instead.
void editHostsFile(const std::function<std::string(const std::string&)>& edit) {
    const int lock = ::open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lock < 0 || ::flock(lock, LOCK_EX) != 0) {
        const int err = errno;
        if (lock >= 0) ::close(lock);
        throw std::runtime_error("test hosts: cannot lock /etc to edit " + std::string(kHostsFile) + ": " +
                                 errnoText(err));
    }
    struct Unlock {
        int fd;
        ~Unlock() { ::close(fd); }
    } unlock{lock};
    const std::string before = readFile(kHostsFile);
    const std::string after = edit(before);
    if (after == before)
        return;
    struct stat st{};
    if (::stat(kHostsFile, &st) != 0)
        throw std::runtime_error(std::string("test hosts: cannot stat ") + kHostsFile + ": " + errnoText(errno));
    // Named like the fixtures' other things, so that one left by a process killed right here goes
    // with them.
    const std::string temporary =
        std::string("/etc/") + kHostsTemporaryPrefix + kPrefix + std::to_string(::getpid()) + "s";
    try {
        writeChecked(temporary, after);
        if (::chown(temporary.c_str(), st.st_uid, st.st_gid) == 0 && ::chmod(temporary.c_str(), st.st_mode & 07777) == 0 &&
            ::rename(temporary.c_str(), kHostsFile) == 0)
            return;
    } catch (const std::runtime_error&) {
        // /etc not writable beside the file: in place, below.
    }
    ::unlink(temporary.c_str());
    writeChecked(kHostsFile, after);
}

// The text without the lines added for fixtures `drop` says yes to.
std::string withoutLinesOf(const std::string& text, const std::function<bool(const std::string&)>& drop) {
    std::string out;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        const std::string owner = hostsLineOwner(line);
        if (owner.empty() || !drop(owner))
            out += line + "\n";
    }
    return out;
}

// What fixtures of dead processes left: their sessions' processes, namespaces, links, folders and
// /etc/hosts lines.
void removeLeftovers() {
    for (const std::string& ns : namespaceNames()) {
        if (!leftoverOfDeadProcess(ns))
            continue;
        killNamespace(ns);
        quietly({program("ip"), "netns", "del", ns});
    }
    for (const std::string& link : linkNames())
        if (leftoverOfDeadProcess(link))
            quietly({program("ip"), "link", "del", link});
    try {
        for (const std::string& entry : listDirectory(kFolderParent))
            if (entry.rfind(kFolderPrefix, 0) == 0 && leftoverOfDeadProcess(entry.substr(std::strlen(kFolderPrefix))))
                removeAll(joinPath(kFolderParent, entry));
    } catch (const FileError&) {
        // A folder another process is removing at the same time.
    }
    try {
        const std::string prefix = kHostsTemporaryPrefix;
        for (const std::string& entry : listDirectory("/etc"))
            if (entry.rfind(prefix, 0) == 0 && leftoverOfDeadProcess(entry.substr(prefix.size())))
                ::unlink(("/etc/" + entry).c_str());
    } catch (const FileError&) {
        // /etc unreadable: nothing of ours there either.
    }
    editHostsFile([](const std::string& text) { return withoutLinesOf(text, leftoverOfDeadProcess); });
}

struct Ipv4Net {
    uint32_t address = 0;
    int length = 32;
};

std::optional<Ipv4Net> parseNet(const std::string& token) {
    const size_t slash = token.find('/');
    in_addr a{};
    if (::inet_pton(AF_INET, token.substr(0, slash).c_str(), &a) != 1)
        return std::nullopt;
    Ipv4Net net;
    net.address = ntohl(a.s_addr);
    if (slash != std::string::npos) {
        net.length = std::atoi(token.c_str() + slash + 1);
        if (net.length < 0 || net.length > 32)
            return std::nullopt;
    }
    return net;
}

bool overlaps(const Ipv4Net& a, const Ipv4Net& b) {
    const int length = std::min(a.length, b.length);
    const uint32_t mask = length == 0 ? 0 : ~uint32_t(0) << (32 - length);
    return (a.address & mask) == (b.address & mask);
}

// The IPv4 networks this machine has addresses or routes in, so that a fixture's subnet is one
// nothing else uses (another fixture's bridge included).
std::vector<Ipv4Net> networksInUse() {
    std::vector<Ipv4Net> out;
    for (const std::vector<std::string>& argv :
         {std::vector<std::string>{program("ip"), "-o", "-4", "addr", "show"},
          std::vector<std::string>{program("ip"), "-4", "route", "show", "table", "all"}}) {
        std::istringstream in(runProcess(argv).output);
        std::string token;
        while (in >> token)
            if (const std::optional<Ipv4Net> net = parseNet(token))
                out.push_back(*net);
    }
    // The DNS resolver may sit in 10.0.0.0/8 behind the default route, in no route of its own.
    try {
        std::istringstream in(readFile("/etc/resolv.conf"));
        std::string token;
        while (in >> token)
            if (const std::optional<Ipv4Net> net = parseNet(token))
                out.push_back(*net);
    } catch (const FileError&) {
        // No resolv.conf: no resolver to keep clear of.
    }
    return out;
}

std::string dotted(unsigned net, int host) {
    return "10." + std::to_string(net >> 8) + "." + std::to_string(net & 255) + "." + std::to_string(host);
}

// A locally administered MAC address that names the fixture's process, sequence and interface.
std::string mac(pid_t pid, unsigned sequence, unsigned interface) {
    char text[32];
    std::snprintf(text, sizeof text, "02:%02x:%02x:%02x:%02x:%02x", (pid >> 16) & 255, (pid >> 8) & 255, pid & 255,
                  sequence & 255, interface & 255);
    return text;
}

// Whether this machine routes packets between its interfaces (net.ipv4.ip_forward).
bool forwardsPackets() {
    try {
        return readFile("/proc/sys/net/ipv4/ip_forward").rfind("0", 0) != 0;
    } catch (const FileError&) {
        return true; // unknown: as if it did
    }
}

bool acceptsConnections(const std::string& address, int port) {
    const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0)
        return false;
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, address.c_str(), &sa.sin_addr);
    bool open = ::connect(s, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
    if (!open && errno == EINPROGRESS) {
        pollfd p{s, POLLOUT, 0};
        int err = 0;
        socklen_t len = sizeof err;
        open = ::poll(&p, 1, 500) == 1 && ::getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    ::close(s);
    return open;
}

// Writes "test host: <step>: errno <n>" to stderr with async-signal-safe calls only (after fork).
void reportChildFailure(const char* step) {
    char digits[12];
    size_t at = sizeof digits;
    int n = errno;
    do {
        digits[--at] = static_cast<char>('0' + n % 10);
        n /= 10;
    } while (n > 0 && at > 0);
    const char* head = "test host: ";
    ssize_t ignored = ::write(2, head, std::strlen(head));
    ignored = ::write(2, step, std::strlen(step));
    ignored = ::write(2, ": errno ", 8);
    ignored = ::write(2, digits + at, sizeof digits - at);
    ignored = ::write(2, "\n", 1);
    (void)ignored;
}

// Starts argv inside host `name`: its network namespace, a UTS namespace with the host's name, and
// a mount namespace whose /sys shows that network's interfaces (as `ip netns exec` does). Started
// by fork and exec rather than through `ip netns exec ... unshare --uts sh -c 'hostname ...'`, so
// that no shell reads the arguments. The child dies with the thread that made it (PR_SET_PDEATHSIG):
// a test binary that is killed leaves no sshd listening.
pid_t startInHost(const std::string& name, const std::vector<std::string>& args, const std::string& logFile) {
    const std::string nsPath = "/run/netns/" + name;
    const int ns = ::open(nsPath.c_str(), O_RDONLY | O_CLOEXEC);
    if (ns < 0)
        throw std::runtime_error("test hosts: cannot open " + nsPath + ": " + errnoText(errno));
    const int out = ::open(logFile.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out < 0 || null < 0) {
        const int err = errno;
        ::close(ns);
        if (out >= 0) ::close(out);
        if (null >= 0) ::close(null);
        throw std::runtime_error("test hosts: cannot open " + logFile + ": " + errnoText(err));
    }
    std::vector<std::string> copy = args;
    std::vector<char*> argv;
    for (std::string& a : copy)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = ::getpid();

    const pid_t pid = ::fork();
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent)
            ::_exit(127);
        ::dup2(null, 0);
        ::dup2(out, 1);
        ::dup2(out, 2);
        const char* step = nullptr;
        if (::setns(ns, CLONE_NEWNET) != 0)
            step = "setns";
        else if (::unshare(CLONE_NEWUTS | CLONE_NEWNS) != 0)
            step = "unshare";
        else if (::mount("", "/", nullptr, MS_SLAVE | MS_REC, nullptr) != 0)
            step = "mount --make-rslave /";
        else {
            // A /sys that is not mounted is fine; one that cannot be mounted for this network is not.
            ::umount2("/sys", MNT_DETACH);
            if (::mount(name.c_str(), "/sys", "sysfs", 0, nullptr) != 0)
                step = "mount sysfs";
            else if (::sethostname(name.c_str(), name.size()) != 0)
                step = "sethostname";
        }
        if (!step) {
            // Descriptors the test process has open without O_CLOEXEC stay out of sshd.
            ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
            ::execv(argv[0], argv.data());
            step = "exec";
        }
        reportChildFailure(step);
        ::_exit(127);
    }
    const int err = errno;
    ::close(ns);
    ::close(out);
    ::close(null);
    if (pid < 0)
        throw std::runtime_error("test hosts: fork failed: " + errnoText(err));
    return pid;
}

// Waits for `pid` (a child) to end after `signal`, SIGKILL after 5 s.
void endChild(pid_t pid, int signal) {
    ::kill(pid, signal);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > end) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

} // namespace

std::string TestHosts::available() {
    static const std::string reason = [] () -> std::string {
        if (::geteuid() != 0)
            return "test hosts need root (network namespaces, a bridge, veths, sshd); uid is " +
                   std::to_string(::geteuid());
        if (program("ip").empty())
            return "no ip program (Debian package iproute2)";
        if (::access(kSshd, X_OK) != 0)
            return std::string("no ") + kSshd + " (Debian package openssh-server)";
        if (program("ssh").empty() || program("ssh-keygen").empty())
            return "no ssh or ssh-keygen (Debian package openssh-client)";
        // Namespaces may be refused (a container without CAP_SYS_ADMIN, a seccomp profile): ask the
        // kernel in a child that makes them and exits.
        const pid_t pid = ::fork();
        if (pid == 0)
            ::_exit(::unshare(CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWNS) == 0 ? 0 : errno);
        if (pid < 0)
            return "cannot fork to try namespaces: " + errnoText(errno);
        int status = 0;
        ::waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return "namespaces are refused here: unshare(CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWNS): " +
                   (WIFEXITED(status) ? errnoText(WEXITSTATUS(status)) : std::string("killed"));
        return "";
    }();
    return reason;
}

TestHosts::TestHosts(int count) {
    if (count < 1 || count > 26)
        throw std::invalid_argument("test hosts: count must be 1 to 26 (one letter each), not " +
                                    std::to_string(count));
    const std::string why = available();
    if (!why.empty())
        throw std::runtime_error("test hosts cannot be made here: " + why);
    try {
        setUp(count);
    } catch (...) {
        tearDown();
        throw;
    }
}

TestHosts::~TestHosts() {
    tearDown();
}

void TestHosts::setUp(int count) {
    removeLeftovers();
    const pid_t pid = ::getpid();
    // Two digits of sequence keep the longest name (the bridge, "<base>br") within the 15
    // characters of an interface name.
    m_sequence = g_sequence.fetch_add(1) % 100;
    const unsigned sequence = m_sequence;
    m_base = kPrefix + std::to_string(pid) + "s" + std::to_string(sequence);
    m_bridge = m_base + "br";
    m_bridgeMac = mac(pid, sequence, 255);
    for (int i = 0; i < count; ++i) {
        Host h;
        h.name = m_base + static_cast<char>('a' + i);
        h.veth = m_base + "v" + static_cast<char>('a' + i);
        h.innerMac = mac(pid, sequence, static_cast<unsigned>(i));
        h.outerMac = mac(pid, sequence, 128 + static_cast<unsigned>(i));
        m_hosts.push_back(h);
        m_names.push_back(h.name);
    }
    // Names exact: "pxt1s1a" is no business of "pxt1s10a"'s fixture.
    const std::vector<std::string> namespaces = namespaceNames();
    for (const Host& h : m_hosts)
        if (std::find(namespaces.begin(), namespaces.end(), h.name) != namespaces.end())
            throw std::runtime_error("test hosts: namespace " + h.name + " exists already");

    m_folder = joinPath(kFolderParent, kFolderPrefix + m_base);
    if (::mkdir(m_folder.c_str(), 0700) != 0)
        throw std::runtime_error("test hosts: cannot make " + m_folder + ": " + errnoText(errno));
    m_madeFolder = true;
    // The subnet first: the ssh config names every host by its address.
    chooseSubnet();
    writeKeysAndConfigs();
    makeNetwork();
    m_addedHostsLines = true;
    editHostsFile([this](const std::string& text) {
        std::string out = text;
        if (!out.empty() && out.back() != '\n')
            out += "\n";
        for (size_t i = 0; i < m_hosts.size(); ++i)
            out += address(static_cast<int>(i)) + "\t" + m_hosts[i].name + "\t" + kHostsMarker + m_base + "\n";
        return out;
    });
    // sshd needs its privilege-separation folder; the package makes it only at boot (tmpfiles).
    ::mkdir("/run/sshd", 0755);
    for (int i = 0; i < count; ++i)
        startSshd(i);
}

void TestHosts::writeKeysAndConfigs() {
    m_identity = joinPath(m_folder, "id_ed25519");
    must({program("ssh-keygen"), "-q", "-t", "ed25519", "-N", "", "-C", m_base, "-f", m_identity},
         "making the login key");
    must({program("ssh-keygen"), "-q", "-t", "ed25519", "-N", "", "-C", m_base, "-f",
          joinPath(m_folder, "ssh_host_ed25519_key")},
         "making the host key");
    writeFileAtomic(joinPath(m_folder, "authorized_keys"), readFile(m_identity + ".pub"));
    createDirectories(joinPath(m_folder, "home"));

    std::ostringstream sshd;
    sshd << "# The sshd of test hosts " << m_base << "*: root logs in with the fixture's key only.\n"
         << "HostKey " << joinPath(m_folder, "ssh_host_ed25519_key") << "\n"
         << "AuthorizedKeysFile " << joinPath(m_folder, "authorized_keys") << "\n"
         << "PermitRootLogin prohibit-password\n"
         << "PubkeyAuthentication yes\n"
         << "PasswordAuthentication no\n"
         << "KbdInteractiveAuthentication no\n"
         << "UsePAM no\n"
         // The folder lies in /tmp, which every user may write, so sshd's ownership checks of
         // the path to authorized_keys would refuse it; the folder itself is root's, mode 0700.
         << "StrictModes no\n"
         << "PrintMotd no\n"
         << "PrintLastLog no\n"
         << "UseDNS no\n"
         // mpirun opens one connection per host at the same moment.
         << "MaxStartups 100:30:200\n"
         // Sessions get a home of their own: the shell sshd starts reads no startup files of this
         // machine's root (a session killed at teardown in the middle of one could leave its
         // locks behind), and nothing a session writes to ~ lands in root's home.
         << "SetEnv HOME=" << joinPath(m_folder, "home") << "\n";
    writeFileAtomic(joinPath(m_folder, "sshd_config"), sshd.str());

    std::ostringstream ssh;
    ssh << "# Test hosts " << m_base << "*: one block per host, by address, so that no name needs "
        << "resolving.\n";
    for (size_t i = 0; i < m_hosts.size(); ++i)
        ssh << "Host " << m_hosts[i].name << "\n"
            << "  HostName " << address(static_cast<int>(i)) << "\n"
            << "  User root\n"
            << "  IdentityFile " << m_identity << "\n"
            << "  IdentitiesOnly yes\n"
            << "  StrictHostKeyChecking no\n"
            << "  UserKnownHostsFile /dev/null\n"
            << "  GlobalKnownHostsFile /dev/null\n"
            << "  BatchMode yes\n"
            << "  ConnectTimeout 5\n"
            << "  LogLevel ERROR\n";
    m_sshConfig = joinPath(m_folder, "ssh_config");
    writeFileAtomic(m_sshConfig, ssh.str());
}

void TestHosts::chooseSubnet() {
    // A /24 in 10.0.0.0/8 that no address or route of this machine touches, first trying one
    // derived from the pid and sequence so that fixtures of two test binaries differ.
    const std::vector<Ipv4Net> used = networksInUse();
    const unsigned start = static_cast<unsigned>(::getpid()) * 100u + m_sequence;
    bool found = false;
    for (unsigned k = 0; k < 65536 && !found; ++k) {
        m_net = (start + k * 257u) & 0xffffu;
        const std::optional<Ipv4Net> candidate = parseNet(dotted(m_net, 0) + "/24");
        found = m_net != 0;
        for (const Ipv4Net& net : used)
            if (found && overlaps(net, *candidate))
                found = false;
    }
    if (!found)
        throw std::runtime_error("test hosts: every /24 of 10.0.0.0/8 is in use on this machine");

}

void TestHosts::makeNetwork() {
    const std::string& ip = program("ip");
    must({ip, "link", "add", "name", m_bridge, "address", m_bridgeMac, "type", "bridge"}, "making bridge " + m_bridge);
    m_madeBridge = true;
    must({ip, "addr", "add", bridgeAddress() + "/24", "dev", m_bridge}, "addressing bridge " + m_bridge);
    must({ip, "link", "set", m_bridge, "up"}, "starting bridge " + m_bridge);
    for (size_t i = 0; i < m_hosts.size(); ++i) {
        Host& h = m_hosts[i];
        must({ip, "netns", "add", h.name}, "making namespace " + h.name);
        h.madeNamespace = true;
        must({ip, "link", "add", h.veth, "address", h.outerMac, "type", "veth", "peer", "name", "eth0", "address",
              h.innerMac, "netns", h.name},
             "making veth " + h.veth);
        h.madeVeth = true;
        must({ip, "link", "set", h.veth, "master", m_bridge}, "putting " + h.veth + " on " + m_bridge);
        must({ip, "link", "set", h.veth, "up"}, "starting " + h.veth);
        must({ip, "-n", h.name, "addr", "add", address(static_cast<int>(i)) + "/24", "dev", "eth0"},
             "addressing " + h.name);
        must({ip, "-n", h.name, "link", "set", "lo", "up"}, "starting lo of " + h.name);
        linkUp(static_cast<int>(i));
        // This machine's side knows every host's interface for good too (see linkDown).
        must({ip, "neigh", "replace", address(static_cast<int>(i)), "lladdr", h.innerMac, "dev", m_bridge, "nud",
              "permanent"},
             "fixing the neighbour " + h.name + " on " + m_bridge);
    }
}

void TestHosts::linkUp(int i) {
    const std::string& ip = program("ip");
    const Host& h = host(i);
    must({ip, "-n", h.name, "link", "set", "eth0", "up"}, "starting eth0 of " + h.name);
    // Taking eth0 down drops its routes and neighbours; they come back with it. The default route
    // reaches this machine's own addresses only while it forwards nothing (ip_forward 0); on a
    // machine that forwards, the hosts get no default route, so that nothing of theirs leaves it.
    if (!forwardsPackets())
        must({ip, "-n", h.name, "route", "replace", "default", "via", bridgeAddress()}, "routing " + h.name);
    // Fixed neighbours: a host whose link is down then makes its peers' packets vanish (they time
    // out, as across a cut cable) instead of failing ARP ("No route to host" after 3 s).
    must({ip, "-n", h.name, "neigh", "replace", bridgeAddress(), "lladdr", m_bridgeMac, "dev", "eth0", "nud",
          "permanent"},
         "fixing the bridge as neighbour of " + h.name);
    for (size_t j = 0; j < m_hosts.size(); ++j)
        if (static_cast<int>(j) != i)
            must({ip, "-n", h.name, "neigh", "replace", address(static_cast<int>(j)), "lladdr", m_hosts[j].innerMac,
                  "dev", "eth0", "nud", "permanent"},
                 "fixing " + m_hosts[j].name + " as neighbour of " + h.name);
}

void TestHosts::linkDown(int i) {
    must({program("ip"), "-n", host(i).name, "link", "set", "eth0", "down"}, "taking eth0 of " + host(i).name + " down");
}

void TestHosts::startSshd(int i) {
    Host& h = m_hosts.at(static_cast<size_t>(i));
    if (h.sshd != 0)
        throw std::logic_error("test hosts: the sshd of " + h.name + " runs already");
    std::vector<std::string> argv = {kSshd, "-D", "-e", "-f", joinPath(m_folder, "sshd_config"), "-o",
                                     "ListenAddress=" + address(i), "-o",
                                     "PidFile=" + joinPath(m_folder, h.name + ".sshd.pid")};
    if (!h.force_command.empty()) argv.insert(argv.end(), {"-o", "ForceCommand=" + h.force_command});
    h.sshd = startInHost(h.name, argv, joinPath(m_folder, h.name + ".sshd.log"));
    waitForSshd(i);
}

void TestHosts::slowLogins(int i, double seconds) {
    Host& h = m_hosts.at(static_cast<size_t>(i));
    h.force_command.clear();
    if (seconds > 0) {
        h.force_command = joinPath(m_folder, h.name + ".slow-login.sh");
        std::ostringstream script;
        script << "#!/bin/sh\nsleep " << seconds << "\n"
               << "if [ -n \"$SSH_ORIGINAL_COMMAND\" ]; then exec /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"; fi\n"
               << "exec /bin/sh\n";
        writeFileAtomic(h.force_command, script.str());
        ::chmod(h.force_command.c_str(), 0755);
    }
    stopSshd(i);
    startSshd(i);
}

void TestHosts::waitForSshd(int i) {
    Host& h = m_hosts.at(static_cast<size_t>(i));
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!acceptsConnections(address(i), 22)) {
        int status = 0;
        const bool ended = ::waitpid(h.sshd, &status, WNOHANG) == h.sshd;
        if (ended || std::chrono::steady_clock::now() > end) {
            std::string log;
            try {
                log = readFile(joinPath(m_folder, h.name + ".sshd.log"));
            } catch (const FileError&) {
                log = "(no log)";
            }
            if (ended)
                h.sshd = 0;
            throw std::runtime_error("test hosts: the sshd of " + h.name + (ended ? " ended" : " does not listen") +
                                     " on " + address(i) + ":22 after 10 s; its log: " + log);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

std::vector<std::string> TestHosts::tcpPeers(int i) const {
    std::vector<std::string> peers;
    // Any process of the namespace shows the namespace's sockets; its sshd is there while it runs.
    for (pid_t pid : namespacePids(host(i).name)) {
        std::string table;
        try {
            table = readFile("/proc/" + std::to_string(pid) + "/net/tcp");
        } catch (const FileError&) {
            continue; // ended since
        }
        std::istringstream lines(table);
        std::string line;
        std::getline(lines, line); // "  sl  local_address rem_address   st ..."
        while (std::getline(lines, line)) {
            std::istringstream fields(line);
            std::string slot, local, remote, state;
            fields >> slot >> local >> remote >> state;
            const size_t colon = remote.find(':');
            if (colon == std::string::npos || state == "0A") // 0A: listening, no peer
                continue;
            // The address as the kernel prints it: the network-order word read as a host integer.
            in_addr a{};
            a.s_addr = static_cast<uint32_t>(std::stoul(remote.substr(0, colon), nullptr, 16));
            char text[INET_ADDRSTRLEN] = {};
            ::inet_ntop(AF_INET, &a, text, sizeof text);
            peers.push_back(std::string(text) + ":" + std::to_string(std::stoul(remote.substr(colon + 1), nullptr, 16)));
        }
        return peers;
    }
    return peers;
}

pid_t TestHosts::sshdPid(int i) const {
    return host(i).sshd;
}

void TestHosts::stopSshd(int i) {
    Host& h = m_hosts.at(static_cast<size_t>(i));
    if (h.sshd == 0)
        return;
    endChild(h.sshd, SIGTERM);
    h.sshd = 0;
}

std::string TestHosts::delayUnavailable() const {
    const std::string& tc = program("tc");
    if (tc.empty())
        return "no tc program (Debian package iproute2)";
    // Whether the kernel has netem shows only by asking: on the host's loopback, which no test uses.
    const ProcessResult r =
        runProcess({tc, "-n", host(0).name, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"});
    if (r.exitCode != 0)
        return "tc netem does not work here (a kernel without sch_netem?): " + r.output;
    quietly({tc, "-n", host(0).name, "qdisc", "del", "dev", "lo", "root"});
    return "";
}

void TestHosts::delay(int i, int ms) {
    const std::string why = delayUnavailable();
    if (!why.empty())
        throw std::runtime_error("test hosts: cannot delay " + host(i).name + ": " + why);
    if (ms <= 0) {
        quietly({program("tc"), "-n", host(i).name, "qdisc", "del", "dev", "eth0", "root"});
        return;
    }
    must({program("tc"), "-n", host(i).name, "qdisc", "replace", "dev", "eth0", "root", "netem", "delay",
          std::to_string(ms) + "ms"},
         "delaying " + host(i).name);
}

void TestHosts::tearDown() noexcept {
    // Each step on its own: one that fails leaves the others to do.
    auto attempt = [this](const char* what, const std::function<void()>& step) {
        try {
            step();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "test hosts %s: teardown: %s: %s\n", m_base.c_str(), what, e.what());
        }
    };
    for (Host& h : m_hosts)
        if (h.sshd != 0)
            ::kill(h.sshd, SIGKILL);
    for (const Host& h : m_hosts)
        if (h.madeNamespace)
            attempt("killing what runs there", [&] { killNamespace(h.name); });
    for (Host& h : m_hosts) {
        if (h.sshd != 0) {
            int status = 0;
            ::waitpid(h.sshd, &status, 0);
            h.sshd = 0;
        }
    }
    const std::string& ip = program("ip");
    // The veths first: deleting one removes both ends at once, where a deleted namespace's end
    // goes only when the kernel gets round to freeing that namespace.
    attempt("removing the veths", [&] {
        const std::vector<std::string> links = linkNames();
        for (Host& h : m_hosts)
            if (h.madeVeth && std::find(links.begin(), links.end(), h.veth) != links.end())
                quietly({ip, "link", "del", h.veth});
    });
    for (Host& h : m_hosts) {
        if (h.madeNamespace)
            quietly({ip, "netns", "del", h.name});
        h.madeNamespace = h.madeVeth = false;
    }
    if (m_madeBridge)
        quietly({ip, "link", "del", m_bridge});
    m_madeBridge = false;
    if (m_addedHostsLines)
        attempt("removing its /etc/hosts lines", [this] {
            editHostsFile([this](const std::string& text) {
                return withoutLinesOf(text, [this](const std::string& owner) { return owner == m_base; });
            });
        });
    m_addedHostsLines = false;
    if (m_madeFolder)
        attempt("removing its folder", [this] { removeAll(m_folder); });
    m_madeFolder = false;
}

const TestHosts::Host& TestHosts::host(int i) const {
    if (i < 0 || static_cast<size_t>(i) >= m_hosts.size())
        throw std::out_of_range("test hosts: no host " + std::to_string(i) + " of " + std::to_string(m_hosts.size()));
    return m_hosts[static_cast<size_t>(i)];
}

const std::string& TestHosts::name(int i) const {
    return host(i).name;
}

std::string TestHosts::address(int i) const {
    host(i);
    return inSubnet(11 + i);
}

std::string TestHosts::subnet() const {
    return inSubnet(0) + "/24";
}

std::string TestHosts::bridgeAddress() const {
    return inSubnet(1);
}

std::string TestHosts::inSubnet(int host) const {
    // 10.0.0.x is never chosen: an address asked for before the subnet is would name some other
    // network's machine.
    if (m_net == 0)
        throw std::logic_error("test hosts: no subnet chosen yet");
    return dotted(m_net, host);
}

std::vector<std::string> TestHosts::mpirunArgs() const {
    // plm_rsh_args: ssh reads this fixture's config (addresses, key, no host-key prompts); mpirun
    //   passes it on to the daemons, which start each other the same way.
    // oob_tcp_if_include: mpirun offers the daemons only its bridge address; without it they
    //   connect back to it at this machine's other addresses, through their default route.
    // btl_tcp_if_include: the ranks' TCP transport on the bridge. The hosts have only eth0 and
    //   loopback, so this changes nothing here, but it is what a cluster with more networks needs;
    //   by subnet, since the interface is called differently on each side.
    return {"--mca", "plm_rsh_args", "-F " + m_sshConfig, "--mca", "oob_tcp_if_include", subnet(),
            "--mca", "btl_tcp_if_include", subnet()};
}

ProcessResult TestHosts::run(int i, const std::vector<std::string>& argv) const {
    return runProcess({program("ssh"), "-F", m_sshConfig, "--", host(i).name, remoteCommand(argv)});
}

std::vector<HostProcess> TestHosts::processes(int i) const {
    std::vector<HostProcess> out;
    for (pid_t pid : namespacePids(host(i).name)) {
        std::string command;
        try {
            command = readFile("/proc/" + std::to_string(pid) + "/cmdline");
        } catch (const FileError&) {
            continue; // ended since
        }
        while (!command.empty() && command.back() == '\0')
            command.pop_back();
        for (char& c : command)
            if (c == '\0')
                c = ' ';
        out.push_back({pid, command});
    }
    return out;
}

} // namespace parallax::testing
