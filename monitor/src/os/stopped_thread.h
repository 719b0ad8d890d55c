// A thread held in a ptrace stop for as short a time as possible. stop() seizes it, interrupts it
// and waits for the stop; the destructor always detaches, re-injecting a signal the stop swallowed
// and leaving a job-control stop in place. While any StoppedThread exists, SIGTERM, SIGINT, SIGHUP,
// SIGQUIT and the job-control stops SIGTSTP, SIGTTIN, SIGTTOU to the monitor are held back (see
// TerminationSignalsHeld), so a monitor asked to stop mid-sample still detaches first.
#pragma once

#include <csignal>
#include <string>
#include <variant>

#include "os/ids.h"
#include "os/ptrace.h"

namespace parastack::os {

// Why a thread could not be stopped: a value for the sample, never an exception.
enum class StopFailure {
  Exited,         // gone before or during the stop
  Zombie,         // exited, not yet reaped
  Denied,         // another user's process, or no ptrace permission
  AlreadyTraced,  // a debugger (or another monitor) is attached
  Replaced,       // the rank exited and its pid now belongs to another process: not touched
  // Waiting uninterruptibly in the kernel (state D: a stalled file system, a device): a ptrace stop
  // would only take effect once the wait ends, and the monitor would wait with it. Not touched.
  InKernel,
  Failed,  // anything else
};
const char* to_string(StopFailure failure);
// The failure an errno from reading a process's /proc files or memory stands for: ENOENT and
// ESRCH mean it is gone, EPERM and EACCES that it is not ours; anything else is Failed.
StopFailure failure_from_errno(int error);

// Whether stopping a thread blocked in this system call (x86-64 numbers) makes the call fail with
// EINTR once it resumes, though no handler ran and nothing was delivered: signal(7), "Interruption
// of system calls and library functions by stop signals", which misses the asynchronous I/O
// waits. A ptrace stop is such a stop. Measured (10 seize-interrupt-detach rounds each, kernel
// 6.18): EINTR every time in epoll_wait (with or without a timeout), semop, sigwaitinfo,
// io_uring_enter, io_getevents, recv under SO_RCVTIMEO; never in poll, ppoll, select, pselect,
// read (pipe, eventfd, signalfd, inotify), futex, clock_nanosleep, wait4, flock, msgrcv,
// mq_receive, sigsuspend, recv and accept without a timeout.
bool stop_interrupts(long syscall);

// Blocks the termination and job-control stop signals for its lifetime; pending ones are
// delivered at destruction.
class TerminationSignalsHeld {
 public:
  TerminationSignalsHeld();
  ~TerminationSignalsHeld();
  TerminationSignalsHeld(const TerminationSignalsHeld&) = delete;
  TerminationSignalsHeld& operator=(const TerminationSignalsHeld&) = delete;

 private:
  sigset_t previous_;
};

class StoppedThread {
 public:
  // Stops thread `tid` of `process`, and only of that process: a pid that now names another
  // process (start time differs) is refused before the seize, and checked again once seized (a
  // seized thread's pid cannot pass to anyone), before it is stopped.
  static std::variant<StoppedThread, StopFailure> stop(const ProcessIdentity& process, Tid tid);

  StoppedThread(StoppedThread&& other) noexcept;
  StoppedThread& operator=(StoppedThread&&) = delete;
  StoppedThread(const StoppedThread&) = delete;
  StoppedThread& operator=(const StoppedThread&) = delete;
  ~StoppedThread() { detach(); }

  Tid tid() const { return tid_; }
  bool job_control_stopped() const { return job_control_stopped_; }
  // Running (state R in /proc) at the look just before the stop: at work, or ready to be.
  bool was_running() const { return was_running_; }
  // Detach now (idempotent); the destructor does it otherwise.
  void detach();

 private:
  StoppedThread(Tid tid, int pending_signal, bool job_control_stopped, bool was_running)
      : tid_(tid),
        pending_signal_(pending_signal),
        job_control_stopped_(job_control_stopped),
        was_running_(was_running) {}

  Tid tid_;
  int pending_signal_ = 0;
  bool job_control_stopped_ = false;
  bool was_running_ = false;
  bool attached_ = true;
};

}  // namespace parastack::os
