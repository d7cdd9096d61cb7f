// parallax-cli: runs and supervises training runs, and reads the run store.
#include "app/cli/CliError.h"
#include "app/cli/Commands.h"
#include "app/cli/Subcommands.h"
#include "core/launch/Preflight.h"
#include "core/launch/SpecRejected.h"
#include "core/spec/SpecIO.h"
#include "core/util/BuildId.h"

#include <CLI/CLI.hpp>

#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <iostream>

using namespace parallax;

namespace {

const char* kFooter = R"(RUN is a run id or a run name (the latest run of that name).

Exit codes:
  0  done; for run, resume and attach: the run succeeded
  1  the run failed (or was lost)
  2  invalid spec or command line
  3  the run was stopped on request
  4  could not do it (unknown run, unreadable store, missing parallax-worker)

The worker is found beside parallax-cli or through the PARALLAX_WORKER environment variable.)";

// Runs the subcommand that was given; what goes wrong is one line on stderr and its exit code.
int runSubcommand(std::string store, const std::vector<Subcommand>& subcommands) {
    try {
        // Messages name the store by its full path, and a detached supervisor must find it too.
        store = std::filesystem::absolute(store).string();
        for (const Subcommand& s : subcommands) {
            if (!*s.app)
                continue;
            if (s.createsRunFiles) {
                // A run's folder, checkpoints and logs may hold secrets: what the supervisor, the
                // launcher and the ranks create is readable by this user only.
                ::umask(077);
            }
            return s.run(store);
        }
    } catch (const SpecRejected& e) {
        std::cerr << "parallax-cli: the spec has errors; nothing was started:\n" << e.what() << std::endl;
        return ExitCode::Usage;
    } catch (const PreflightFailed& e) {
        std::cerr << "parallax-cli: the hosts or Slurm are not ready; nothing was started:\n" << e.what() << std::endl;
        return ExitCode::Error;
    } catch (const SpecError& e) {
        std::cerr << "parallax-cli: " << e.what() << std::endl;
        return ExitCode::Usage;
    } catch (const std::invalid_argument& e) {
        std::cerr << "parallax-cli: " << e.what() << std::endl;
        return ExitCode::Usage;
    } catch (const CliError& e) {
        std::cerr << "parallax-cli: " << e.what() << std::endl;
        return e.code();
    } catch (const std::exception& e) {
        std::cerr << "parallax-cli: " << e.what() << std::endl;
        return ExitCode::Error;
    }
    return ExitCode::Usage;
}

} // namespace

int main(int argc, char** argv) {
    // A closed terminal or pipe must not kill a supervisor mid-run through SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);

    CLI::App app{"Parallax: launch, supervise and inspect distributed training runs", "parallax-cli"};
    app.footer(kFooter);
    app.set_version_flag("--version", versionLine("parallax-cli"));
    app.require_subcommand(1);
    app.fallthrough();
    std::string store = RunStore::defaultPath();
    app.add_option("--store", store, "The run store (SQLite)")->capture_default_str();
    const std::vector<Subcommand> subcommands = addSubcommands(app);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? 0 : ExitCode::Usage;
    }
    return runSubcommand(store, subcommands);
}
