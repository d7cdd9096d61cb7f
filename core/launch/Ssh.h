#pragma once

#include "core/spec/ClusterProfile.h"

#include <string>
#include <vector>

namespace parallax {

// How every ssh of Parallax is started (preflight, liveness probes, cleanup): batch mode (never a
// password prompt), a connect timeout, then the profile's settings.
struct SshOptions {
    int connect_timeout_s = 5;
    std::string control_path; // non-empty: ssh -S PATH (a connection shared with a master)
    bool master = false;      // start the master of control_path: -M (and -N without a remote command)
    int alive_interval_s = 0; // > 0: ServerAliveInterval (and CountMax 2) to notice a dead link
};

// The one place that turns an argument vector into the command line a remote shell runs: each
// argument quoted (shellQuote), joined by blanks. ssh itself hands the remote side a string.
std::string remoteCommandLine(const std::vector<std::string>& argv);

// [-l user] [-p port] [-i identity] [-J jump] [-F config] [-o K=V...]: the profile's settings.
std::vector<std::string> sshArguments(const SshSettings& ssh);

// ssh ... host -- <remoteCommandLine(remote)>; an empty `remote` with options.master runs nothing.
std::vector<std::string> sshCommand(const std::string& host, const SshSettings& ssh,
                                    const std::vector<std::string>& remote, const SshOptions& options = {});

// What to do when ssh could not reach `host` (exit status 255), from its complaint (the last line it
// wrote to stderr): the fix that cause asks for (a name that does not resolve, no sshd on the
// port, a host down or cut off, an unknown or changed host key), else that `ssh HOST true` must
// work without a password.
std::string sshRemedy(const std::string& complaint, const std::string& host);

// The same settings as Open MPI's rsh launcher takes them (plm_rsh_args), which it splits at
// blanks: std::invalid_argument naming the setting when a value holds one.
std::string mpirunSshArgs(const SshSettings& ssh);

} // namespace parallax
