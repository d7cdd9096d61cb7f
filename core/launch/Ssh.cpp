#include "core/launch/Ssh.h"

#include "core/launch/ShellQuote.h"

#include <stdexcept>

namespace parallax {

std::string remoteCommandLine(const std::vector<std::string>& argv) {
    std::string line;
    for (const std::string& a : argv) {
        if (!line.empty()) line.push_back(' ');
        line += shellQuote(a);
    }
    return line;
}

std::vector<std::string> sshArguments(const SshSettings& ssh) {
    std::vector<std::string> a;
    if (!ssh.user.empty()) a.insert(a.end(), {"-l", ssh.user});
    if (ssh.port > 0) a.insert(a.end(), {"-p", std::to_string(ssh.port)});
    if (!ssh.identity_file.empty()) a.insert(a.end(), {"-i", ssh.identity_file});
    if (!ssh.jump_host.empty()) a.insert(a.end(), {"-J", ssh.jump_host});
    if (!ssh.config_file.empty()) a.insert(a.end(), {"-F", ssh.config_file});
    for (const std::string& o : ssh.options) a.insert(a.end(), {"-o", o});
    return a;
}

std::vector<std::string> sshCommand(const std::string& host, const SshSettings& ssh,
                                    const std::vector<std::string>& remote, const SshOptions& options) {
    std::vector<std::string> a = {"ssh"};
    // Profile settings first: for -o options ssh keeps the first value it is given, so these win
    // over ~/.ssh/config and the batch settings below.
    const std::vector<std::string> profile = sshArguments(ssh);
    a.insert(a.end(), profile.begin(), profile.end());
    a.insert(a.end(), {"-o", "BatchMode=yes", "-o", "ConnectTimeout=" + std::to_string(options.connect_timeout_s)});
    if (options.alive_interval_s > 0)
        a.insert(a.end(), {"-o", "ServerAliveInterval=" + std::to_string(options.alive_interval_s), "-o",
                           "ServerAliveCountMax=2"});
    if (!options.control_path.empty()) {
        a.insert(a.end(), {"-S", options.control_path});
        if (options.master) a.insert(a.end(), {"-M", "-o", "ControlPersist=no"});
        if (options.master && remote.empty()) a.push_back("-N");
    }
    a.push_back(host);
    if (!remote.empty()) {
        a.push_back("--");
        a.push_back(remoteCommandLine(remote));
    }
    return a;
}

std::string mpirunSshArgs(const SshSettings& ssh) {
    std::string out = "-o BatchMode=yes";
    for (const std::string& arg : sshArguments(ssh)) {
        if (arg.find_first_of(" \t\n") != std::string::npos)
            throw std::invalid_argument("the cluster profile's ssh setting '" + arg +
                                        "' holds a blank, which Open MPI's ssh launcher cannot pass on; use a path "
                                        "or value without blanks");
        out += " " + arg;
    }
    return out;
}

std::string sshRemedy(const std::string& complaint, const std::string& host) {
    auto says = [&complaint](std::initializer_list<const char*> phrases) {
        for (const char* p : phrases)
            if (complaint.find(p) != std::string::npos) return true;
        return false;
    };
    if (says({"Could not resolve hostname", "Name or service not known", "Temporary failure in name resolution",
              "nodename nor servname"}))
        return "the name " + host + " does not resolve here: check its spelling, /etc/hosts, DNS, or a Host entry "
               "in ~/.ssh/config";
    if (says({"Connection refused"}))
        return "nothing answers ssh there: start sshd on " + host + ", or set its port (ssh.port in the profile, "
               "or ~/.ssh/config)";
    if (says({"No route to host", "Network is unreachable", "Connection timed out", "Operation timed out"}))
        return "check that " + host + " is up and reachable from this machine's network";
    if (says({"Host key verification failed", "REMOTE HOST IDENTIFICATION HAS CHANGED"}))
        return "its host key is unknown here or has changed: connect once with `ssh " + host +
               "` and check the key (a stale line of ~/.ssh/known_hosts goes)";
    return "check that `ssh " + host + " true` works here without a password (a key in the agent or the profile's "
           "ssh.identity_file)";
}

} // namespace parallax
