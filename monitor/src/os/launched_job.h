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
#include "os/scoped_fd.h"

namespace parastack::os {

class LaunchedJob {
 public:
  // Starts argv with parastack's stdin, stdout and stderr, in parastack's process group (a
  // terminal's Ctrl-C reaches both), with default signal dispositions except those parastack's
  // own parent ignored. Returns a clear message if it cannot be started.
  static std::variant<LaunchedJob, std::string> start(const std::vector<std::string>& argv);

  LaunchedJob(LaunchedJob&&) noexcept = default;
  LaunchedJob& operator=(LaunchedJob&&) noexcept = default;

  Pid pid() const { return pid_; }
  // A pidfd of the launcher (-1 if the kernel has none): signals through it reach the launcher or,
  // once it is reaped, nobody, never a process that reused its pid.
  int pidfd() const { return pidfd_.get(); }
  // Reaps whatever child has exited (orphans too); the launcher's exit status once it has exited,
  // as a shell reports it (128 + signal number if it was killed).
  std::optional<int> poll_exit();
  int wait_exit();
  bool running() { return !poll_exit().has_value(); }

  // Every live process of the job: the launcher's descendants and orphans re-parented to us.
  std::vector<ProcessIdentity> processes() const;

  // SIGTERM to every process of the job, up to `grace` for them to go, then SIGKILL to what is
  // left; reaps them. Returns how many processes had to be killed with SIGKILL.
  int terminate(std::chrono::milliseconds grace);

 private:
  LaunchedJob(Pid pid, ScopedFd pidfd) : pid_(pid), pidfd_(std::move(pidfd)) {}
  void launcher_reaped(int status);
  Pid pid_;
  ScopedFd pidfd_;
  std::optional<int> status_;
};

// Signals sent to parastack are the job's (a user's kill, srun passing on scancel's SIGTERM,
// SIGUSR1 for a checkpoint). catch_job_signals catches SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1
// and SIGUSR2 before the job starts, and remembers them; forward_signals_to passes the remembered
// ones on and, from then on, each as it arrives, from the handler itself (pidfd_send_signal is
// async-signal-safe): while parastack samples, waits, writes its report or mails, a signal is
// neither late nor lost, and two different ones are both passed on. A signal parastack's parent
// left ignored (nohup's SIGHUP; a non-interactive shell's SIGINT and SIGQUIT for a background
// job) is not caught: it stays ignored, for the job too (LaunchedJob::start). A terminal's Ctrl-C
// already reaches the launcher (same process group): a SIGINT sent by the kernel is not passed on.
void catch_job_signals();
void forward_signals_to(const LaunchedJob& job);
// The signals passed on so far, in words ("SIGTERM", "SIGTERM, SIGUSR1"); empty: none. A job that
// ended by one ended because someone asked it to, which its report says.
std::string signals_passed_on();

// Makes this process a child subreaper (PR_SET_CHILD_SUBREAPER); false if the kernel refused.
bool become_subreaper();

}  // namespace parastack::os
