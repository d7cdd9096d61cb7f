#pragma once

#include "core/spec/RunSpec.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace parallax {

// One entry of launch.hosts or of a profile's hosts: "name:slots".
struct HostSlots {
    std::string name;
    int64_t slot_count = 0;
};
// std::nullopt unless `entry` is "name:slots" with a name without blanks or commas and slots of 1
// to 999999.
std::optional<HostSlots> parseHostSlots(const std::string& entry);
// The host an entry names: "node1" for "node1:8", the entry itself when it is no "name:slots".
std::string hostNameOf(const std::string& entry);

// How ssh reaches the hosts of a cluster. Empty fields leave ssh's own configuration (~/.ssh/config)
// in charge.
struct SshSettings {
    std::string user;
    int64_t port = 0;            // 0: ssh's default
    std::string identity_file;
    std::string jump_host;       // ssh -J
    std::string config_file;     // ssh -F
    std::vector<std::string> options; // more "-o Key=Value" settings, as "Key=Value"
};

// A named set of machines a run can target (launch.cluster), kept in a TOML file of its own:
//
//   hosts = ["node1:8", "node2:8"]
//   worker = "/opt/parallax/bin/parallax-worker"   # the worker's path on the hosts
//   [ssh]
//   user = "alice"
//   port = 22
//   identity_file = "~/.ssh/id_ed25519"
//   jump_host = "bastion.example.org"
//   config_file = "~/.ssh/config.cluster"
//   options = ["ServerAliveInterval=5"]
//   [env]                                           # set for every rank
//   NCCL_SOCKET_IFNAME = "ib0"
//   [mca]                                           # Open MPI settings
//   btl_tcp_if_include = "10.1.0.0/16"
struct ClusterProfile {
    std::string name;
    std::string source; // the file it was read from
    std::vector<std::string> hosts;
    std::string worker; // empty: the local worker's path (a shared file system)
    SshSettings ssh;
    std::map<std::string, std::string> env;
    std::map<std::string, std::string> mca;
};

// Reads a profile; SpecError naming the file, the key and the fix for anything wrong in it.
ClusterProfile readClusterProfile(const std::string& path);
ClusterProfile parseClusterProfile(const std::string& text, const std::string& source);

// Where profiles are looked for, in order: $PARALLAX_CLUSTERS (folders separated by ':'), then
// $XDG_CONFIG_HOME/parallax/clusters (~/.config/parallax/clusters).
std::vector<std::string> clusterProfileFolders();
// Every profile found there (a file that cannot be read is left out: the Cluster page lists it
// with readClusterProfile's error).
std::vector<std::string> clusterProfileFiles();
// launch.cluster: a profile's name (<folder>/<name>.toml) or a path to its .toml file. SpecError
// naming launch.cluster: where it was looked for when there is none, or the profile's own error.
ClusterProfile findClusterProfile(const std::string& nameOrPath);
// "" when launch.cluster's value can name a profile; else the error (a path whose file is no .toml:
// launch.cluster never reads a file that is not a profile's).
std::string clusterReferenceProblem(const std::string& nameOrPath);

// The hosts a run targets and how to reach them: the profile launch.cluster names, or
// launch.hosts with ssh's own settings, less launch.exclude_hosts. Throws SpecError as
// findClusterProfile does, and for an excluded host that is not among them.
ClusterProfile resolveHosts(const RunSpec& spec);

} // namespace parallax
