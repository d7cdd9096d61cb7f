#include "core/launch/SignalNames.h"

#include <csignal>

namespace parallax {

namespace {

struct SignalInfo {
    int number;
    const char* name;
    const char* description; // glibc's strsignal text
};

const SignalInfo kSignals[] = {
    {SIGHUP, "SIGHUP", "Hangup"},
    {SIGINT, "SIGINT", "Interrupt"},
    {SIGQUIT, "SIGQUIT", "Quit"},
    {SIGILL, "SIGILL", "Illegal instruction"},
    {SIGTRAP, "SIGTRAP", "Trace/breakpoint trap"},
    {SIGABRT, "SIGABRT", "Aborted"},
    {SIGBUS, "SIGBUS", "Bus error"},
    {SIGFPE, "SIGFPE", "Floating point exception"},
    {SIGKILL, "SIGKILL", "Killed"},
    {SIGUSR1, "SIGUSR1", "User defined signal 1"},
    {SIGSEGV, "SIGSEGV", "Segmentation fault"},
    {SIGUSR2, "SIGUSR2", "User defined signal 2"},
    {SIGPIPE, "SIGPIPE", "Broken pipe"},
    {SIGALRM, "SIGALRM", "Alarm clock"},
    {SIGTERM, "SIGTERM", "Terminated"},
    {SIGCHLD, "SIGCHLD", "Child exited"},
    {SIGCONT, "SIGCONT", "Continued"},
    {SIGSTOP, "SIGSTOP", "Stopped (signal)"},
    {SIGTSTP, "SIGTSTP", "Stopped"},
    {SIGXCPU, "SIGXCPU", "CPU time limit exceeded"},
    {SIGXFSZ, "SIGXFSZ", "File size limit exceeded"},
    {SIGSYS, "SIGSYS", "Bad system call"},
};

} // namespace

std::string signalName(int signal) {
    for (const SignalInfo& s : kSignals) {
        if (s.number == signal)
            return s.name;
    }
    return "signal " + std::to_string(signal);
}

int signalFromDescription(std::string_view text) {
    while (!text.empty() && (text.back() == ' ' || text.back() == '.'))
        text.remove_suffix(1);
    constexpr std::string_view core = " (core dumped)";
    if (text.size() > core.size() && text.substr(text.size() - core.size()) == core)
        text.remove_suffix(core.size());
    for (const SignalInfo& s : kSignals) {
        if (text == s.description || text == s.name)
            return s.number;
    }
    return 0;
}

} // namespace parallax
