// The patterns a report or log path may hold, as Slurm's own output paths have them: one
// `#SBATCH --parastack=report=hangs/%j.json` line serves every job the script is submitted as,
// and one log-file= per node (%h) keeps nodes from appending to one file over NFS.
#pragma once

#include <functional>
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
  // %A and %a, as sbatch -o has them, so a report can be named like the array task's output file:
  // the array's job id and the task's index, or for a job that is no array task its own id and
  // Slurm's "no value", 4294967294 (which is what `sbatch -o slurm-%A_%a.out` writes then).
  std::string array_job = job;
  std::string array_task = kNotAnArrayTask;

  static constexpr const char* kNotAnArrayTask = "4294967294";
};

// `pattern` with %j, %A, %a, %h, %p, %u replaced and %% made one %. A value never adds a directory:
// a '/' in it becomes '_'. Throws std::invalid_argument, in words for the user, on any other %
// (check first with path_pattern_error).
std::string expand_path_pattern(std::string_view pattern, const PathFields& fields);

// Why `pattern` is not one (a % that is not %j, %A, %a, %h, %p, %u or %%), or nullopt.
std::optional<std::string> path_pattern_error(std::string_view pattern);

// `path` as a pattern that expands to itself (every % written %%): a default path built from a
// directory whose name holds a %.
std::string literal_path(std::string_view path);

// Fills %A and %a from a batch job's environment (`variable` gives a variable's value, "" if it is
// unset): Slurm's SLURM_ARRAY_JOB_ID and SLURM_ARRAY_TASK_ID; PBS Pro's PBS_ARRAY_ID and
// PBS_ARRAY_INDEX; Torque's PBS_ARRAYID, its array being the job id with [] for [INDEX]. Only if the
// environment is fields.job's own (its SLURM_JOB_ID, or PBS_JOBID, is that id): a monitor started
// by hand for another job leaves them as for a job that is no array task.
void add_array_fields(PathFields& fields, const std::function<std::string(const char*)>& variable);

// The fields for this process (its host, pid and user: the uid's number if it has no name, the
// array fields from its environment) and `job`.
PathFields own_path_fields(std::string job);

}  // namespace parastack::cli
