// The command `parastack run` starts (the launcher: mpirun, mpiexec, srun, or a script that runs
// them) and every process under it. parastack makes itself a child subreaper, so ranks whose
// launcher died are re-parented to it instead of init: "the job" stays findable, and a kill leaves
// no orphan behind.
//
// Never harm a job: destroying a LaunchedJob does nothing to the processes. Only an explicit
// terminate() or stop() (a confirmed hang, by the user's chosen action) touches them.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "os/ids.h"

namespace parastack::os {

class LaunchedJob {
 public:
  // Starts argv with parastack's stdin, stdout and stderr, in parastack's process group (a
  // terminal's Ctrl-C reaches both). Returns a clear message if it cannot be started.
  static std::variant<LaunchedJob, std::string> start(const std::vector<std::string>& argv);

  LaunchedJob(LaunchedJob&&) noexcept = default;
  LaunchedJob& operator=(LaunchedJob&&) noexcept = default;

  Pid pid() const { return pid_; }
  // Reaps whatever child has exited (orphans too); the launcher's exit status once it has exited,
  // as a shell reports it (128 + signal number if it was killed).
  std::optional<int> poll_exit();
  int wait_exit();
  bool running() { return !poll_exit().has_value(); }
  void forward(int signal);

  // Every live process of the job: the launcher's descendants and orphans re-parented to us.
  std::vector<Pid> processes() const;

  // SIGTERM to every process of the job, up to `grace` for them to go, then SIGKILL to what is
  // left; reaps them. Returns how many processes had to be killed with SIGKILL.
  int terminate(std::chrono::milliseconds grace);

 private:
  explicit LaunchedJob(Pid pid) : pid_(pid) {}
  Pid pid_;
  std::optional<int> status_;
};

// Makes this process a child subreaper (PR_SET_CHILD_SUBREAPER); false if the kernel refused.
bool become_subreaper();

}  // namespace parastack::os
