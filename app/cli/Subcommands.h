#pragma once

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace parallax {

// One subcommand of parallax-cli as added to its command line. After parsing, `run` does what
// was asked with the store's path, when `app` is the subcommand that was given.
struct Subcommand {
    CLI::App* app = nullptr;
    std::function<int(const std::string& storePath)> run;
    // run, resume, attach: what the supervisor, the launcher and the ranks create is this user's only.
    bool createsRunFiles = false;
};

// Adds every subcommand, its arguments and its help to `app`, in the order --help lists them.
std::vector<Subcommand> addSubcommands(CLI::App& app);

} // namespace parallax
