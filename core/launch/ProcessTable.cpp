#include "core/launch/ProcessTable.h"

#include <dirent.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <cstring>
#include <string>

namespace parallax {

namespace {

// Fields of /proc/<pid>/stat after the command name, which may itself contain spaces and ')'.
bool readStat(pid_t pid, char& state, long& session) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
    FILE* f = std::fopen(path, "re");
    if (!f)
        return false;
    char buf[1024];
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    const char* close = std::strrchr(buf, ')');
    if (!close)
        return false;
    int ppid = 0;
    long pgrp = 0;
    if (std::sscanf(close + 1, " %c %d %ld %ld", &state, &ppid, &pgrp, &session) != 4)
        return false;
    return true;
}

} // namespace

std::vector<pid_t> processesInSession(pid_t sid) {
    std::vector<pid_t> out;
    DIR* dir = opendir("/proc");
    if (!dir)
        return out;
    while (const dirent* e = readdir(dir)) {
        char* end = nullptr;
        const long pid = std::strtol(e->d_name, &end, 10);
        if (pid <= 0 || *end != '\0')
            continue;
        char state = 0;
        long session = 0;
        if (readStat(static_cast<pid_t>(pid), state, session) && session == sid)
            out.push_back(static_cast<pid_t>(pid));
    }
    closedir(dir);
    return out;
}

bool processIsRunning(pid_t pid) {
    if (pid <= 0)
        return false;
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return false;
    char state = 0;
    long session = 0;
    if (!readStat(pid, state, session))
        return kill(pid, 0) == 0 || errno == EPERM;
    return state != 'Z' && state != 'X';
}

std::vector<pid_t> processesNaming(const std::string& text) {
    std::vector<pid_t> out;
    DIR* dir = opendir("/proc");
    if (!dir)
        return out;
    while (const dirent* e = readdir(dir)) {
        char* end = nullptr;
        const long pid = std::strtol(e->d_name, &end, 10);
        if (pid <= 0 || *end != '\0')
            continue;
        std::ifstream in(std::string("/proc/") + e->d_name + "/cmdline", std::ios::binary);
        const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (cmdline.find(text) != std::string::npos && processIsRunning(static_cast<pid_t>(pid)))
            out.push_back(static_cast<pid_t>(pid));
    }
    closedir(dir);
    return out;
}

} // namespace parallax
