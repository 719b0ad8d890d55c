// The options a batch job gives as one list (`sbatch --parastack=action=report,alpha=0.001`), which
// the SPANK plugin hands to parastack-monitor as --job-options NAME=VALUE,...
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace parastack::cli {

// The names a job may set: the watchdog's options, not how monitors find the job.
extern const std::vector<std::string> kJobOptions;

// argv (the program's name first) with every --job-options LIST replaced by --NAME=VALUE arguments;
// a later value of a name wins over an earlier one and over the same option given directly.
// Throws std::runtime_error, in words for the user, on an unknown name or a name without a value.
std::vector<std::string> expand_job_options(const std::vector<std::string>& argv);

// Prints what `--parastack=help` shows: each job option with its description and default.
void list_job_options(CLI::App& app);

}  // namespace parastack::cli
