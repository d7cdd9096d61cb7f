#include "core/launch/SlurmJobs.h"

#include "core/launch/CommandRun.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <sstream>
#include <stdexcept>

namespace parallax {

namespace {

std::string firstLineOf(const std::string& text) {
    const size_t start = text.find_first_not_of(" \t\r\n");
    if (start == std::string::npos) return {};
    const size_t end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    return line;
}

bool saysAnyOf(const std::string& text, std::initializer_list<const char*> phrases) {
    for (const char* p : phrases)
        if (text.find(p) != std::string::npos) return true;
    return false;
}

// What Slurm's client means when it finds no controller, in words, with its fix; empty for any
// other complaint.
std::string noControllerMeaning(const std::string& said) {
    // Without a slurm.conf the client looks for the controller in DNS (configless Slurm) and
    // reports the resolver's failure.
    if (saysAnyOf(said, {"resolve_ctls_from_dns_srv", "Could not establish a configuration source",
                         "fetch_config: DNS SRV lookup failed"}))
        return "this machine has no Slurm configuration (no slurm.conf, and DNS names no controller); set "
               "SLURM_CONF to the cluster's slurm.conf, or run where Slurm's commands are set up";
    if (saysAnyOf(said, {"Unable to contact slurm controller", "Connection refused"}))
        return "the Slurm controller (slurmctld) does not answer; check that it runs and that SLURM_CONF names "
               "its slurm.conf";
    return {};
}

std::string complaint(const CommandResult& r, const std::string& command) {
    if (!r.start_error.empty()) return "cannot run " + command + " (" + r.start_error + "); install slurm-client";
    if (r.timed_out) return command + " did not answer in time; check that slurmctld runs";
    const std::string said = firstLineOf(r.err.empty() ? r.out : r.err);
    const std::string meaning = noControllerMeaning(r.err + "\n" + r.out);
    if (!meaning.empty()) return command + ": " + meaning + " (it said: " + said + ")";
    return command + " exited with code " + std::to_string(r.exit_code) + (said.empty() ? "" : ": " + said);
}

// "00:01:30" as Slurm reads a number of colon-separated parts, with or without days.
std::optional<std::vector<int64_t>> colonParts(const std::string& text) {
    std::vector<int64_t> parts;
    size_t start = 0;
    for (;;) {
        const size_t colon = text.find(':', start);
        const std::string part = text.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
        if (part.empty() || part.size() > 9 || part.find_first_not_of("0123456789") != std::string::npos)
            return std::nullopt;
        parts.push_back(std::stoll(part));
        if (colon == std::string::npos) break;
        start = colon + 1;
    }
    if (parts.size() > 3) return std::nullopt;
    return parts;
}

} // namespace

std::map<std::string, std::string> parseSlurmSettings(const std::string& line) {
    std::map<std::string, std::string> kv;
    std::istringstream words(line);
    for (std::string w; words >> w;) {
        const size_t eq = w.find('=');
        if (eq != std::string::npos && eq > 0) kv.emplace(w.substr(0, eq), w.substr(eq + 1));
    }
    return kv;
}

std::optional<int64_t> parseSlurmDuration(const std::string& text) {
    const size_t dash = text.find('-');
    int64_t days = 0;
    std::string rest = text;
    if (dash != std::string::npos) {
        const std::string d = text.substr(0, dash);
        if (d.empty() || d.size() > 6 || d.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
        days = std::stoll(d);
        rest = text.substr(dash + 1);
    }
    const std::optional<std::vector<int64_t>> p = colonParts(rest);
    if (!p) return std::nullopt;
    const std::vector<int64_t>& v = *p;
    int64_t s = 0;
    if (dash != std::string::npos) {
        // D-HH, D-HH:MM, D-HH:MM:SS
        s = v[0] * 3600 + (v.size() > 1 ? v[1] * 60 : 0) + (v.size() > 2 ? v[2] : 0);
    } else if (v.size() == 1) {
        s = v[0] * 60; // MM
    } else if (v.size() == 2) {
        s = v[0] * 60 + v[1]; // MM:SS
    } else {
        s = v[0] * 3600 + v[1] * 60 + v[2];
    }
    return days * 86400 + s;
}

const std::vector<SlurmEndState>& slurmEndStates() {
    static const std::vector<SlurmEndState> states = {
        {"COMPLETED", std::nullopt, "the job completed"},
        {"FAILED", RunState::Failed, "the job failed"},
        {"TIMEOUT", RunState::Failed, "the job reached its time limit"},
        {"PREEMPTED", RunState::Failed, "the job was preempted"},
        {"NODE_FAIL", RunState::Failed, "a node of the job failed"},
        {"OUT_OF_MEMORY", RunState::Failed, "the job ran out of memory"},
        {"CANCELLED", RunState::Failed, "the job was cancelled (scancel)"},
        {"BOOT_FAIL", RunState::Failed, "the job's nodes failed to boot"},
        {"DEADLINE", RunState::Failed, "the job reached its deadline"},
        {"REVOKED", RunState::Failed, "the job was revoked (it runs on another cluster)"},
    };
    return states;
}

const SlurmEndState* slurmEndState(const std::string& state) {
    size_t end = 0;
    while (end < state.size() && (std::isupper(static_cast<unsigned char>(state[end])) || state[end] == '_')) ++end;
    const std::string word = state.substr(0, end);
    for (const SlurmEndState& s : slurmEndStates())
        if (word == s.state) return &s;
    return nullptr;
}

SlurmJobStatus querySlurmJob(const std::string& jobId, std::chrono::milliseconds timeout) {
    SlurmJobStatus st;
    st.job.job_id = jobId;
    const std::vector<CommandResult> r = runCommands({{"scontrol", "show", "job", jobId, "--oneliner"}}, timeout);
    if (r[0].exit_code != 0 || r[0].out.find("JobState=") == std::string::npos) {
        st.error = complaint(r[0], "scontrol show job " + jobId);
        return st;
    }
    const std::map<std::string, std::string> kv = parseSlurmSettings(firstLineOf(r[0].out));
    auto get = [&](const char* key) {
        const auto it = kv.find(key);
        return it == kv.end() ? std::string() : it->second;
    };
    st.known = true;
    st.job.state = get("JobState");
    st.job.reason = get("Reason");
    if (st.job.reason == "None") st.job.reason.clear();
    st.job.nodes = get("NodeList");
    if (st.job.nodes == "(null)") st.job.nodes.clear();
    st.exit_code = get("ExitCode");
    st.partition = get("Partition");
    st.time_limit_s = parseSlurmDuration(get("TimeLimit")).value_or(-1);
    st.run_time_s = parseSlurmDuration(get("RunTime")).value_or(-1);
    if (st.job.state == "RUNNING" && st.time_limit_s >= 0 && st.run_time_s >= 0)
        st.job.time_left_s = std::max<int64_t>(0, st.time_limit_s - st.run_time_s);
    if (st.job.state == "PENDING") {
        std::vector<std::string> command = {"squeue", "--noheader", "--states=PENDING", "--format=%i", "--sort=-p,i"};
        if (!st.partition.empty()) command.push_back("--partition=" + st.partition);
        const std::vector<CommandResult> q = runCommands({command}, timeout);
        if (q[0].exit_code == 0) {
            std::istringstream in(q[0].out);
            int64_t place = 0;
            for (std::string id; in >> id;) {
                ++place;
                if (id == jobId) {
                    st.job.queue_position = place;
                    break;
                }
            }
        }
    }
    return st;
}

std::string submitSlurmJob(const std::vector<std::string>& submit, const std::map<std::string, std::string>& env) {
    if (submit.empty()) throw std::invalid_argument("no sbatch command to submit the job with");
    const std::vector<CommandResult> r = runCommands({submit}, std::chrono::seconds(60), env);
    if (r[0].exit_code != 0)
        throw std::runtime_error("Slurm refused the job: " + complaint(r[0], submit.front()));
    // --parsable: "ID" or "ID;cluster".
    std::string id = firstLineOf(r[0].out);
    id = id.substr(0, id.find(';'));
    if (id.empty() || id.find_first_not_of("0123456789_") != std::string::npos)
        throw std::runtime_error(submit.front() + " printed no job id (it said: " + firstLineOf(r[0].out + r[0].err) +
                                 ")");
    return id;
}

std::vector<SlurmPartition> parseSlurmPartitions(const std::string& sinfoOutput) {
    std::vector<SlurmPartition> out;
    std::istringstream in(sinfoOutput);
    for (std::string line; std::getline(in, line);) {
        std::vector<std::string> f;
        std::istringstream fields(line);
        for (std::string x; std::getline(fields, x, '|');) f.push_back(x);
        if (f.size() != 5 || f[0].empty()) continue;
        SlurmPartition p;
        p.name = f[0];
        if (p.name.back() == '*') {
            p.is_default = true;
            p.name.pop_back();
        }
        p.availability = f[1];
        p.time_limit = f[4];
        // "A/I/O/T": allocated, idle, other, total.
        auto counts = [](const std::string& text, int64_t* a, int64_t* i, int64_t* o, int64_t* t) {
            std::vector<int64_t> v;
            std::istringstream parts(text);
            for (std::string x; std::getline(parts, x, '/');) {
                if (x.empty() || x.find_first_not_of("0123456789") != std::string::npos) return false;
                v.push_back(std::stoll(x));
            }
            if (v.size() != 4) return false;
            *a = v[0], *i = v[1], *o = v[2], *t = v[3];
            return true;
        };
        if (!counts(f[2], &p.nodes_allocated, &p.nodes_idle, &p.nodes_other, &p.nodes_total) ||
            !counts(f[3], &p.cpus_allocated, &p.cpus_idle, &p.cpus_other, &p.cpus_total))
            continue;
        out.push_back(std::move(p));
    }
    return out;
}

SlurmPartitions querySlurmPartitions(std::chrono::milliseconds timeout) {
    SlurmPartitions result;
    const std::vector<CommandResult> r =
        runCommands({{"sinfo", "--noheader", "--format=%P|%a|%F|%C|%l"}}, timeout);
    if (r[0].exit_code != 0) {
        result.error = complaint(r[0], "sinfo");
        return result;
    }
    result.partitions = parseSlurmPartitions(r[0].out);
    if (result.partitions.empty()) result.error = "sinfo lists no partition";
    return result;
}

std::string signalSlurmJob(const std::string& jobId, const std::string& signal) {
    const std::vector<CommandResult> r =
        runCommands({{"scancel", "--signal=" + signal, jobId}}, std::chrono::seconds(20));
    return r[0].exit_code == 0 ? std::string() : complaint(r[0], "scancel --signal=" + signal + " " + jobId);
}

std::string cancelSlurmJob(const std::string& jobId) {
    const std::vector<CommandResult> r = runCommands({{"scancel", jobId}}, std::chrono::seconds(20));
    return r[0].exit_code == 0 ? std::string() : complaint(r[0], "scancel " + jobId);
}

} // namespace parallax
