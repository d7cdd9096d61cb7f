#include "core/spec/ClusterProfile.h"

#include "core/spec/SpecIO.h"
#include "core/spec/Suggestions.h"
#include "core/spec/TomlLimits.h"
#include "core/util/Files.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>

namespace parallax {

namespace {

bool isEnvName(const std::string& name) {
    if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
    for (char c : name)
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
    return true;
}

std::string expandHome(const std::string& path) {
    if (path.rfind("~/", 0) != 0) return path;
    const char* home = std::getenv("HOME");
    return home && *home ? std::string(home) + path.substr(1) : path;
}

// Reads one profile file's table, key by key, with errors that name the file and the key.
class ProfileReader {
public:
    explicit ProfileReader(std::string source) : m_source(std::move(source)) {}

    ClusterProfile read(const toml::table& doc) {
        ClusterProfile p;
        p.source = m_source;
        for (const auto& [key, node] : doc) {
            const std::string k(key.str());
            if (k == "name") p.name = text(node, k);
            else if (k == "hosts") p.hosts = hosts(node);
            else if (k == "worker") p.worker = expandHome(text(node, k));
            else if (k == "ssh") readSsh(table(node, k), p.ssh);
            else if (k == "env") p.env = strings(table(node, k), "env", true);
            else if (k == "mca") p.mca = strings(table(node, k), "mca", false);
            else unknown(k, {"name", "hosts", "worker", "ssh", "env", "mca"});
        }
        if (p.hosts.empty()) fail("hosts", "is missing or empty; list the hosts as hosts = [\"node1:8\", \"node2:8\"]");
        return p;
    }

private:
    [[noreturn]] void fail(const std::string& key, const std::string& message) const {
        throw SpecError(m_source + ": " + key + " " + message);
    }

    void unknown(const std::string& key, const std::vector<std::string>& known) const {
        const std::string near = closestMatch(key, known);
        fail(key, "is not a cluster profile setting" + (near.empty() ? std::string() : "; did you mean " + near + "?"));
    }

    std::string text(const toml::node& node, const std::string& key) const {
        if (const auto* v = node.as_string()) return v->get();
        fail(key, "must be a string");
    }

    const toml::table& table(const toml::node& node, const std::string& key) const {
        if (const auto* t = node.as_table()) return *t;
        fail(key, "must be a table ([" + key + "])");
    }

    std::vector<std::string> hosts(const toml::node& node) const {
        const auto* list = node.as_array();
        if (!list) fail("hosts", "must be a list of \"name:slots\" strings");
        std::vector<std::string> out;
        std::map<std::string, size_t> firstEntry;
        for (size_t i = 0; i < list->size(); ++i) {
            const auto* v = (*list)[i].as_string();
            const std::string key = "hosts[" + std::to_string(i) + "]";
            const std::optional<HostSlots> host = v ? parseHostSlots(v->get()) : std::nullopt;
            if (!host) fail(key, "must be \"name:slots\" with slots of 1 or more, e.g. \"node1:8\"");
            const auto [first, isNew] = firstEntry.emplace(host->name, i);
            if (!isNew)
                fail(key, "names " + host->name + " again (as hosts[" + std::to_string(first->second) +
                              "] does); list each host once with all its slots, e.g. \"" + host->name + ":2\"");
            out.push_back(v->get());
        }
        return out;
    }

    void readSsh(const toml::table& t, SshSettings& ssh) const {
        for (const auto& [key, node] : t) {
            const std::string k(key.str());
            const std::string path = "ssh." + k;
            if (k == "user") ssh.user = text(node, path);
            else if (k == "port") {
                const auto* v = node.as_integer();
                if (!v || v->get() < 1 || v->get() > 65535) fail(path, "must be a port number from 1 to 65535");
                ssh.port = v->get();
            } else if (k == "identity_file") ssh.identity_file = expandHome(text(node, path));
            else if (k == "jump_host") ssh.jump_host = text(node, path);
            else if (k == "config_file") ssh.config_file = expandHome(text(node, path));
            else if (k == "options") {
                const auto* list = node.as_array();
                if (!list) fail(path, "must be a list of \"Key=Value\" strings");
                for (size_t i = 0; i < list->size(); ++i) {
                    const auto* v = (*list)[i].as_string();
                    if (!v || v->get().find('=') == std::string::npos || v->get().front() == '-')
                        fail(path + "[" + std::to_string(i) + "]", "must be an ssh option as \"Key=Value\", e.g. \"ServerAliveInterval=5\"");
                    ssh.options.push_back(v->get());
                }
            } else unknown(path, {"ssh.user", "ssh.port", "ssh.identity_file", "ssh.jump_host", "ssh.config_file", "ssh.options"});
        }
        for (const std::string* value : {&ssh.user, &ssh.jump_host})
            if (value->find_first_of(" \t\n'\"") != std::string::npos || (!value->empty() && value->front() == '-'))
                fail("ssh", "user and jump_host must be plain names (no blanks, quotes or a leading '-')");
    }

    std::map<std::string, std::string> strings(const toml::table& t, const std::string& section, bool envNames) const {
        std::map<std::string, std::string> out;
        for (const auto& [key, node] : t) {
            const std::string k(key.str());
            const std::string path = section + "." + k;
            if (envNames && !isEnvName(k)) fail(path, "is not a valid environment variable name");
            if (!envNames && (k.empty() || k.find_first_of(" \t=") != std::string::npos))
                fail(path, "is not an Open MPI parameter name");
            out[k] = text(node, path);
        }
        return out;
    }

    std::string m_source;
};

std::string baseNameWithout(const std::string& path, const std::string& suffix) {
    std::string name = baseName(path);
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
        name.resize(name.size() - suffix.size());
    return name;
}

} // namespace

std::string hostNameOf(const std::string& entry) {
    const std::optional<HostSlots> h = parseHostSlots(entry);
    return h ? h->name : entry;
}

std::optional<HostSlots> parseHostSlots(const std::string& entry) {
    const size_t colon = entry.rfind(':');
    if (colon == std::string::npos) return std::nullopt;
    HostSlots h;
    h.name = entry.substr(0, colon);
    const std::string count = entry.substr(colon + 1);
    if (h.name.empty() || h.name.find_first_of(" \t,") != std::string::npos || h.name.front() == '-')
        return std::nullopt;
    // At most six digits: std::stoll cannot overflow.
    if (count.empty() || count.size() > 6 || count.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt;
    h.slot_count = std::stoll(count);
    if (h.slot_count < 1) return std::nullopt;
    return h;
}

ClusterProfile parseClusterProfile(const std::string& text, const std::string& source) {
    checkTomlLimits(text, source);
    toml::table doc;
    try {
        doc = toml::parse(std::string_view(text), std::string_view(source));
    } catch (const toml::parse_error& e) {
        const auto& where = e.source().begin;
        throw SpecError(source + ":" + std::to_string(where.line) + ":" + std::to_string(where.column) + ": " +
                        std::string(e.description()));
    }
    ClusterProfile p = ProfileReader(source).read(doc);
    if (p.name.empty()) p.name = baseNameWithout(source, ".toml");
    return p;
}

ClusterProfile readClusterProfile(const std::string& path) {
    if (isDirectory(path)) throw SpecError(path + " is a folder, not a cluster profile (a .toml file)");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw SpecError("cannot read the cluster profile: cannot read " + path + ": " + std::strerror(errno));
    // Bounded: a device or a pipe given as a profile is not read to its end.
    const std::string text = readTomlText(in);
    if (in.bad()) throw SpecError("cannot read the cluster profile: cannot read " + path + ": " + std::strerror(errno));
    return parseClusterProfile(text, path);
}

std::vector<std::string> clusterProfileFolders() {
    std::vector<std::string> folders;
    if (const char* list = std::getenv("PARALLAX_CLUSTERS")) {
        std::string all = list;
        for (size_t start = 0; start <= all.size();) {
            const size_t colon = all.find(':', start);
            const std::string one = all.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
            if (!one.empty()) folders.push_back(expandHome(one));
            if (colon == std::string::npos) break;
            start = colon + 1;
        }
    }
    const char* xdg = std::getenv("XDG_CONFIG_HOME");
    const char* home = std::getenv("HOME");
    if (xdg && *xdg == '/') folders.push_back(std::string(xdg) + "/parallax/clusters");
    else if (home && *home) folders.push_back(std::string(home) + "/.config/parallax/clusters");
    return folders;
}

std::vector<std::string> clusterProfileFiles() {
    std::vector<std::string> files;
    for (const std::string& folder : clusterProfileFolders()) {
        if (!isDirectory(folder)) continue;
        try {
            for (const std::string& name : listDirectory(folder))
                if (name.size() > 5 && name.compare(name.size() - 5, 5, ".toml") == 0)
                    files.push_back(joinPath(folder, name));
        } catch (const FileError&) {
        }
    }
    return files;
}

std::string clusterReferenceProblem(const std::string& nameOrPath) {
    if (nameOrPath.find('/') == std::string::npos) return "";
    const std::string suffix = ".toml";
    if (nameOrPath.size() > suffix.size() &&
        nameOrPath.compare(nameOrPath.size() - suffix.size(), suffix.size(), suffix) == 0)
        return "";
    return "launch.cluster = \"" + nameOrPath + "\" is a path, but not of a cluster profile (a .toml file); write " +
           "the profile's name (lab for lab.toml in a profile folder) or the path of its .toml file";
}

ClusterProfile findClusterProfile(const std::string& nameOrPath) {
    if (const std::string problem = clusterReferenceProblem(nameOrPath); !problem.empty()) throw SpecError(problem);
    const std::string named = "launch.cluster = \"" + nameOrPath + "\": ";
    std::string file;
    std::string looked;
    if (nameOrPath.find('/') != std::string::npos) {
        file = expandHome(nameOrPath);
        if (!isRegularFile(file))
            throw SpecError(named + (fileSize(file) >= 0 ? "is not a file" : "there is no file") + " at " + file +
                            "; give the path of a cluster profile's .toml file, or a profile's name");
    } else {
        for (const std::string& folder : clusterProfileFolders()) {
            const std::string candidate = joinPath(folder, nameOrPath + ".toml");
            if (isRegularFile(candidate)) {
                file = candidate;
                break;
            }
            looked += (looked.empty() ? "" : ", ") + folder;
        }
    }
    if (file.empty())
        throw SpecError(named + "there is no cluster profile " + nameOrPath + ".toml in " +
                        (looked.empty() ? std::string("any profile folder") : looked) +
                        "; write one there (resources/clusters/example.toml shows the settings) or give its path");
    try {
        return readClusterProfile(file);
    } catch (const SpecError& e) {
        throw SpecError(named + e.what()); // the spec's setting that led here, then the profile's own error
    }
}

ClusterProfile resolveHosts(const RunSpec& spec) {
    ClusterProfile hosts;
    if (!spec.launch.cluster.empty()) {
        hosts = findClusterProfile(spec.launch.cluster);
    } else {
        hosts.name = "launch.hosts";
        hosts.source = "the spec";
        hosts.hosts = spec.launch.hosts;
    }
    // Every entry of an excluded host goes, and a host excluded twice is excluded once.
    std::set<std::string> listed;
    for (const std::string& entry : hosts.hosts) listed.insert(hostNameOf(entry));
    const std::set<std::string> excluded(spec.launch.exclude_hosts.begin(), spec.launch.exclude_hosts.end());
    for (const std::string& name : excluded)
        if (!listed.count(name))
            throw SpecError("launch.exclude_hosts names \"" + name + "\", which is not among the hosts of " +
                            (spec.launch.cluster.empty() ? std::string("launch.hosts")
                                                         : "the cluster profile " + hosts.source));
    hosts.hosts.erase(std::remove_if(hosts.hosts.begin(), hosts.hosts.end(),
                                     [&](const std::string& entry) { return excluded.count(hostNameOf(entry)) > 0; }),
                      hosts.hosts.end());
    return hosts;
}

} // namespace parallax
