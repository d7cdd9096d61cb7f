#pragma once

#include "core/spec/SpecValidator.h"

#include <string>
#include <vector>

namespace parallax {

// launch.mpirun_args holds options of the launcher the target uses: mpirun (Open MPI 4.1) for
// "local" and "hosts", srun (Slurm 22.05) for "slurm". Parallax passes them between its own
// options and the worker's command line, so an option it does not know, or one that takes the
// worker's path as its value, breaks the launch in ways the launcher reports badly; and some
// options make the launcher start programs other than the worker. Each option of each launcher is
// listed once, with what it takes and what it does to a run.
enum class Launcher { OpenMpi, Srun };

enum class OptionArgs {
    None,     // a flag
    One,      // one value: mpirun and srun "--opt VALUE", srun also "--opt=VALUE" and "-oVALUE"
    Two,      // mpirun --mca NAME VALUE
    Optional, // srun "--opt[=VALUE]", "-o[VALUE]": a value only when attached
};

enum class OptionEffect {
    Plain,         // a setting of the launcher
    SetByParallax, // Parallax sets it from a spec field (the note names it): an error
    StopsRun,      // the ranks would not start, or their output would not reach Parallax: an error
    RunsCommands,  // starts other programs or changes what runs: a notice (a warning), not an error
};

struct LauncherOption {
    const char* name;   // long name without dashes ("mca", "cpus-per-task"), as written after "--"
    char letter;        // one-letter form ('c' for -c), 0 when none
    OptionArgs args;
    OptionEffect effect;
    // What the option does, for every effect but Plain. For RunsCommands "{}" stands for its value:
    // "starts {} on every host instead of orted".
    const char* note;
};

const std::vector<LauncherOption>& mpirunOptions();
const std::vector<LauncherOption>& srunOptions();

// "mpirun (Open MPI 4.1)", "srun (Slurm 22.05)"
std::string launcherName(Launcher launcher);

// Issues of launch.mpirun_args for `launcher`, on field launch.mpirun_args: an error for an
// unknown option, a missing value or an effect Parallax cannot supervise; a warning starting
// "launch.mpirun_args runs commands: " for each option, value or extra program that makes the
// launcher run something besides the worker.
std::vector<SpecIssue> checkLauncherArgs(const std::vector<std::string>& args, Launcher launcher);

// What setting environment variable `name` to `value` in every rank does when it changes the code
// a rank runs ("loads '/tmp/x.so' into every rank"), or "" for an ordinary variable. Used for
// mpirun's -x, srun's --export and launch.env.
std::string environmentRunsCommands(const std::string& name, const std::string& value);

} // namespace parallax
