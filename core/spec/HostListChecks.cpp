#include "core/spec/HostListChecks.h"

#include "core/spec/CheckedMath.h"
#include "core/spec/ClusterProfile.h"
#include "core/spec/TomlText.h"

#include <map>
#include <set>
#include <string>

namespace parallax {

namespace {

std::string num(size_t v) { return std::to_string(v); }

// Issues of one kind about a list's entries: the first kMostEntryIssues as they are, then one that
// counts the rest.
class EntryIssues {
public:
    EntryIssues(std::vector<SpecIssue>& out, std::string field, bool warning, std::vector<std::string> related)
        : m_out(out), m_field(std::move(field)), m_warning(warning), m_related(std::move(related)) {}

    void add(const std::string& message) {
        if (++m_count <= kMostEntryIssues) m_out.push_back({m_field, message, m_warning, m_related});
    }

    // "launch.hosts: 799990 more entries that are not "name:slots" (800000 in all; the first 10 are
    // listed above)".
    void finish(const std::string& what) {
        if (m_count > kMostEntryIssues)
            m_out.push_back({m_field, m_field + ": " + num(m_count - kMostEntryIssues) + " more " + what + " (" +
                                          num(m_count) + " in all; the first " + num(kMostEntryIssues) +
                                          " are listed above)",
                             m_warning, m_related});
    }

private:
    std::vector<SpecIssue>& m_out;
    std::string m_field;
    bool m_warning;
    std::vector<std::string> m_related;
    size_t m_count = 0;
};

std::string entryName(size_t i) { return "launch.hosts[" + num(i) + "]"; }

// "name:slots" for every entry, each name once; returns the hosts' slots by name.
std::map<std::string, int64_t> checkEntries(const LaunchSpec& l, std::vector<SpecIssue>& out) {
    EntryIssues bad(out, "launch.hosts", false, {});
    EntryIssues twice(out, "launch.hosts", false, {});
    std::map<std::string, int64_t> slots;
    std::map<std::string, size_t> first;
    for (size_t i = 0; i < l.hosts.size(); ++i) {
        const std::string& entry = l.hosts[i];
        const std::optional<HostSlots> host = parseHostSlots(entry);
        if (!host) {
            const std::string name = entry.substr(0, entry.rfind(':'));
            const bool nameOk = !name.empty() && name.find_first_of(" \t,") == std::string::npos && name[0] != '-';
            bad.add(entryName(i) + " = " + tomlString(entry) + " must be \"name:slots\" with slots of 1 or more, e.g. \"" +
                    (nameOk ? name : std::string("node1")) + ":8\"");
            continue;
        }
        const auto [at, isNew] = first.emplace(host->name, i);
        if (isNew) {
            slots[host->name] = host->slot_count;
            continue;
        }
        // One host twice would be counted as two hosts (launch.min_hosts, liveness, cleanup).
        const int64_t both = saturatingAdd(slots[host->name], host->slot_count);
        twice.add(entryName(i) + " = " + tomlString(entry) + " names " + host->name + " again (as " +
                  entryName(at->second) + " does); list each host once with all its slots, e.g. \"" + host->name +
                  ":" + std::to_string(both) + "\"");
    }
    bad.finish("entries that are not \"name:slots\"");
    twice.finish("entries that name a host again");
    return slots;
}

} // namespace

std::vector<SpecIssue> hostListIssues(const RunSpec& s, bool layoutUsable) {
    const LaunchSpec& l = s.launch;
    std::vector<SpecIssue> out;
    if (l.hosts.empty()) {
        out.push_back({"launch.hosts",
                       "launch.hosts is empty; launch.target = \"hosts\" needs \"name:slots\" entries, e.g. hosts = "
                       "[\"node1:8\", \"node2:8\"]",
                       false,
                       {"launch.target", "launch.cluster"}});
        return out;
    }
    const size_t before = out.size();
    const std::map<std::string, int64_t> hosts = checkEntries(l, out);
    const bool entriesOk = out.size() == before;

    EntryIssues missing(out, "launch.exclude_hosts", false, {"launch.hosts"});
    EntryIssues repeated(out, "launch.exclude_hosts", true, {});
    std::set<std::string> excluded;
    for (const std::string& name : l.exclude_hosts) {
        if (!excluded.insert(name).second)
            repeated.add("launch.exclude_hosts names " + tomlString(name) + " more than once; once is enough");
        else if (!hosts.count(name))
            missing.add("launch.exclude_hosts names " + tomlString(name) + ", which is not in launch.hosts");
    }
    missing.finish("hosts that are not in launch.hosts");
    repeated.finish("hosts named again");

    int64_t slots = 0;
    for (const auto& [name, count] : hosts)
        if (!excluded.count(name)) slots = saturatingAdd(slots, count);
    const int64_t needed = s.processCount();
    if (entriesOk && layoutUsable && slots < needed)
        out.push_back({"launch.hosts",
                       "launch.hosts offer " + std::to_string(slots) + " slots" +
                           (l.exclude_hosts.empty() ? std::string() : " besides launch.exclude_hosts") +
                           " but the run needs " + std::to_string(needed) +
                           " processes (parallel.dp * tp * pp); add hosts or slots",
                       false,
                       l.exclude_hosts.empty()
                           ? std::vector<std::string>{"parallel.dp", "parallel.tp", "parallel.pp"}
                           : std::vector<std::string>{"parallel.dp", "parallel.tp", "parallel.pp",
                                                      "launch.exclude_hosts"}});
    return out;
}

int64_t distinctHostCount(const LaunchSpec& l) {
    std::set<std::string> names;
    for (const std::string& entry : l.hosts)
        if (const std::optional<HostSlots> host = parseHostSlots(entry)) names.insert(host->name);
    for (const std::string& name : l.exclude_hosts) names.erase(name);
    return static_cast<int64_t>(names.size());
}

} // namespace parallax
