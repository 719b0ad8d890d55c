#include "cli/path_patterns.h"

#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include "os/batch_system.h"
#include "os/host.h"

namespace parastack::cli {
namespace {

// What %c stands for, or null when c names no field.
const std::string* field_of(char c, const PathFields& fields) {
  switch (c) {
    case 'j':
      return &fields.job;
    case 'A':
      return &fields.array_job;
    case 'a':
      return &fields.array_task;
    case 'h':
      return &fields.host;
    case 'p':
      return &fields.pid;
    case 'u':
      return &fields.user;
    default:
      return nullptr;
  }
}

}  // namespace

std::optional<std::string> path_pattern_error(std::string_view pattern) {
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    if (i + 1 == pattern.size()) return "'" + std::string(pattern) + "' ends in a lone % (%% is a % itself)";
    const char c = pattern[++i];
    if (c != '%' && !field_of(c, PathFields{})) {
      return "'" + std::string(pattern) + "' holds %" + c +
             ": a path knows %j (job id), %A and %a (job array id and index), %h (host), %p (process id), %u "
             "(user) and %% (a % itself)";
    }
  }
  return std::nullopt;
}

std::string expand_path_pattern(std::string_view pattern, const PathFields& fields) {
  if (auto error = path_pattern_error(pattern)) throw std::invalid_argument(*error);
  std::string path;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      path += pattern[i];
    } else if (const std::string* value = field_of(pattern[++i], fields)) {
      for (const char c : *value) path += c == '/' ? '_' : c;  // a value never adds a directory
    } else {
      path += '%';  // %%: the only other one path_pattern_error lets through
    }
  }
  return path;
}

std::string literal_path(std::string_view path) {
  std::string pattern;
  for (const char c : path) pattern += c == '%' ? "%%" : std::string(1, c);
  return pattern;
}

void add_array_fields(PathFields& fields, const std::function<std::string(const char*)>& variable) {
  const std::string& job = fields.job;
  const std::string slurm_job = variable("SLURM_JOB_ID"), pbs_job = variable("PBS_JOBID");
  const bool own_slurm_job = !slurm_job.empty() && job.substr(0, job.find('.')) == slurm_job;  // JOB or JOB.STEP
  if (own_slurm_job && !variable("SLURM_ARRAY_JOB_ID").empty() && !variable("SLURM_ARRAY_TASK_ID").empty()) {
    fields.array_job = variable("SLURM_ARRAY_JOB_ID");
    fields.array_task = variable("SLURM_ARRAY_TASK_ID");
    return;
  }
  if (pbs_job.empty() || job != pbs_job) return;
  if (const std::string index = variable("PBS_ARRAY_INDEX"); !index.empty() && !variable("PBS_ARRAY_ID").empty()) {
    fields.array_job = variable("PBS_ARRAY_ID");  // PBS Pro: 123[].server
    fields.array_task = index;
    return;
  }
  const std::string index = variable("PBS_ARRAYID");  // Torque: job 123[4].server, index 4
  const std::string in_job = "[" + index + "]";
  if (const auto at = job.find(in_job); !index.empty() && at != std::string::npos) {
    fields.array_job = job.substr(0, at) + "[]" + job.substr(at + in_job.size());
    fields.array_task = index;
  }
}

PathFields own_path_fields(std::string job) {
  std::string user = os::user_name();
  if (user.empty()) user = std::to_string(::getuid());
  PathFields fields{.job = std::move(job), .host = os::host_name(), .pid = std::to_string(::getpid()), .user = user};
  add_array_fields(fields, [](const char* name) {
    const char* value = std::getenv(name);
    return std::string(value ? value : "");
  });
  return fields;
}

}  // namespace parastack::cli
