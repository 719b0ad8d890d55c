// The patterns a report or log path may hold, as Slurm's own output paths have them: one
// `#SBATCH --parastack=report=hangs/%j.json` line serves every job the script is submitted as,
// and one log-file= per node (%h) keeps nodes from appending to one file over NFS.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace parastack::cli {

// What the patterns stand for, for one watcher.
struct PathFields {
  std::string job;   // %j: the batch job's id (JOB.STEP for a step watched alone), else the watcher's pid
  std::string host;  // %h: the host the file is written on
  std::string pid;   // %p: the process id of the watcher writing it
  std::string user;  // %u: the job's user
};

// `pattern` with %j, %h, %p, %u replaced and %% made one %. A value never adds a directory: a '/'
// in it becomes '_'. Throws std::invalid_argument, in words for the user, on any other % (check
// first with path_pattern_error).
std::string expand_path_pattern(std::string_view pattern, const PathFields& fields);

// Why `pattern` is not one (a % that is not %j, %h, %p, %u or %%), or nullopt.
std::optional<std::string> path_pattern_error(std::string_view pattern);

// `path` as a pattern that expands to itself (every % written %%): a default path built from a
// directory whose name holds a %.
std::string literal_path(std::string_view path);

// The fields for this process (its host, pid and user: the uid's number if it has no name) and `job`.
PathFields own_path_fields(std::string job);

}  // namespace parastack::cli
