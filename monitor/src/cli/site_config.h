// The site configuration file of `parastack run` (and of the scheduler integrations): one
// `key = value` per line, keys being the long option names of `parastack run` without the dashes,
// `#` starting a comment. Values the user gives on the command line override it.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace parastack::cli {

struct Setting {
  std::string key, value;
  int line = 0;
};

// The settings of a file, or what is wrong with it (unreadable, a line that is not key = value).
std::variant<std::vector<Setting>, std::string> read_site_config(const std::string& path);
// The same on the file's text (pure: read_site_config reads the file and calls it); `path` only
// names the file in what is wrong.
std::variant<std::vector<Setting>, std::string> parse_site_config(std::string_view text, const std::string& path);

// Settings in the same file for the scheduler integrations (pbs_parastack), not for `parastack run`,
// which skips them: the monitor and mpirun to start, mail = yes|no, the mailer, the actions allowed.
inline const std::vector<std::string> kSchedulerSettings{"monitor", "mpirun", "mail", "mailer", "actions"};

// Applies settings to a parsed subcommand (except kSchedulerSettings): each sets the option --KEY unless the command
// line already did, with the option's own validation. The first problem, naming the file and line.
std::optional<std::string> apply_site_config(CLI::App& command, const std::string& path,
                                             const std::vector<Setting>& settings);

}  // namespace parastack::cli
