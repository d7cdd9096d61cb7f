#pragma once

#include <stdexcept>
#include <string>

namespace parallax {

// Exit codes of parallax-cli, listed in its --help.
namespace ExitCode {
inline constexpr int Ok = 0;          // done; for run/resume: the run succeeded
inline constexpr int RunFailed = 1;   // the run failed (or was lost)
inline constexpr int Usage = 2;       // invalid spec or command line
inline constexpr int RunStopped = 3;  // the run was stopped on request
inline constexpr int Error = 4;       // could not do it: unknown run, unreadable store, missing worker
} // namespace ExitCode

// A one-line message for the user (naming the thing and the fix) and the exit code to end with.
class CliError : public std::runtime_error {
public:
    CliError(const std::string& message, int code = ExitCode::Error) : std::runtime_error(message), m_code(code) {}
    int code() const { return m_code; }

private:
    int m_code;
};

} // namespace parallax
