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

} // namespace parallax
