#include "os/stopped_thread.h"

#include <pthread.h>
#include <sys/syscall.h>

#include <cerrno>

#include <utility>

#include "os/proc.h"

namespace parastack::os {
namespace {

sigset_t termination_signals() {
  sigset_t set;
  sigemptyset(&set);
  // And the job-control stops: a monitor stopped by Ctrl-Z (parastack stacks at a terminal) would
  // leave the thread it holds stopped until it is continued.
  for (int signal : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU}) sigaddset(&set, signal);
  return set;
}

// EPERM from PTRACE_SEIZE means "not yours", "already traced" or "exiting" (the kernel refuses a
// task that has begun to exit): /proc tells which.
StopFailure explain_denied(Pid pid) {
  const auto stat = read_stat(pid);
  if (!stat) return StopFailure::Exited;
  if (stat->state == 'Z' || stat->state == 'X') return StopFailure::Zombie;
  if (stat->flags & kTaskExiting) return StopFailure::Exited;
  auto status = read_status(pid);
  if (status && status->tracer != 0) return StopFailure::AlreadyTraced;
  return StopFailure::Denied;
}

// `tid` is a thread of `process` (not of a process that took over a reused pid or tid).
bool thread_of(const ProcessIdentity& process, Tid tid) {
  if (!has_pid_now(process)) return false;
  return tid == main_thread(process.pid) || read_thread_stat(process.pid, tid).has_value();
}

}  // namespace

const char* to_string(StopFailure failure) {
  switch (failure) {
    case StopFailure::Exited:
      return "exited";
    case StopFailure::Zombie:
      return "zombie";
    case StopFailure::Denied:
      return "permission denied";
    case StopFailure::AlreadyTraced:
      return "already traced by a debugger";
    case StopFailure::Replaced:
      return "exited; its pid now belongs to another process";
    case StopFailure::InKernel:
      return "waiting in the kernel (state D)";
    case StopFailure::Failed:
      return "could not stop";
  }
  return "?";
}

bool stop_interrupts(long syscall) {
  switch (syscall) {
    case SYS_epoll_wait:
    case SYS_epoll_pwait:
    case SYS_epoll_pwait2:
    case SYS_semop:
    case SYS_semtimedop:
    case SYS_rt_sigtimedwait:
    case SYS_io_uring_enter:  // waiting for completions
    case SYS_io_getevents:
    case SYS_io_pgetevents:
    // Socket calls fail so only under a timeout (SO_RCVTIMEO, SO_SNDTIMEO), which cannot be seen
    // from outside: all of them are treated as if they had one.
    case SYS_accept:
    case SYS_accept4:
    case SYS_connect:
    case SYS_recvfrom:
    case SYS_recvmsg:
    case SYS_recvmmsg:
    case SYS_sendto:
    case SYS_sendmsg:
    case SYS_sendmmsg:
      return true;
    default:
      return false;
  }
}

StopFailure failure_from_errno(int error) {
  switch (error) {
    case ENOENT:
    case ESRCH:
      return StopFailure::Exited;
    case EPERM:
    case EACCES:
      return StopFailure::Denied;
    default:
      return StopFailure::Failed;
  }
}

TerminationSignalsHeld::TerminationSignalsHeld() {
  const sigset_t set = termination_signals();
  pthread_sigmask(SIG_BLOCK, &set, &previous_);
}

TerminationSignalsHeld::~TerminationSignalsHeld() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

std::variant<StoppedThread, StopFailure> StoppedThread::stop(const ProcessIdentity& process, Tid tid) {
  reap_dying_tracees();  // before anything else: their processes' ends wait for it
  const Pid pid = process.pid;
  // Seized and interrupted in an uninterruptible wait, a thread stops only when the wait ends
  // (seconds or hours on a stalled NFS or Lustre mount), and a seized thread cannot be let go
  // before it stops: the sample, the watch and `parastack stacks` would all wait that long. Such a
  // thread is left alone. One that enters the wait between this look and the interrupt is waited
  // for: a window of microseconds.
  const auto before = read_thread_stat(pid, tid);
  if (before && before->state == 'D') return StopFailure::InKernel;
  const bool was_running = before && before->state == 'R';
  const auto refused = [&] {
    auto stat = read_thread_stat(pid, tid);
    if (stat && stat->state == 'Z') return StopFailure::Zombie;
    return explain_denied(pid);
  };
  PtraceStatus seized = ptrace_seize(tid);
  if (seized == PtraceStatus::Denied) {
    // One look at /proc decides: a second could see a tracer that has let go since, and turn a
    // brief hold (which the caller waits out) into "permission denied".
    const StopFailure why = refused();
    if (why != StopFailure::Denied) return why;
    // A tracer that let go between the refusal and the look (another watchdog's sample,
    // microseconds long) leaves what reads as "not ours": one more try tells.
    seized = ptrace_seize(tid);
  }
  switch (seized) {
    case PtraceStatus::Ok:
      break;
    case PtraceStatus::Gone:
      return StopFailure::Exited;
    case PtraceStatus::Denied:
      return refused();
    case PtraceStatus::Failed:
      return StopFailure::Failed;
  }
  // From here on we are attached: every path detaches. Seized, the thread keeps its tid (and its
  // process the pid) until we let go, and it is not stopped yet: the moment to make sure it is the
  // process we were asked for. A pid reused by another process (the rank exited since discovery)
  // is caught here; that process is then stopped only for the interrupt a detach requires.
  // Nothing may throw past the seize (a thread left seized stops at its next signal, with nobody
  // to let it go): a look that fails (out of memory) counts as "not the process", which detaches.
  bool replaced = true;
  try {
    replaced = !thread_of(process, tid);
  } catch (...) {
  }
  if (ptrace_interrupt(tid) != PtraceStatus::Ok) {
    ptrace_detach(tid, 0);
    return StopFailure::Exited;
  }
  const StopReport report = wait_for_stop(tid);
  if (replaced && report.kind != StopKind::Exited && report.kind != StopKind::Gone) {
    StoppedThread(tid, report.kind == StopKind::SignalDelivery ? report.signal : 0, false, false).detach();
    return StopFailure::Replaced;
  }
  switch (report.kind) {
    case StopKind::Interrupted:
      return StoppedThread(tid, 0, false, was_running);
    case StopKind::GroupStop:
      return StoppedThread(tid, 0, true, was_running);
    case StopKind::SignalDelivery:
      return StoppedThread(tid, report.signal, false, was_running);
    case StopKind::Exited:
    case StopKind::Gone:
      ptrace_detach(tid, 0);  // harmless if it is gone; reaps it if it is a zombie still traced
      return StopFailure::Exited;
  }
  return StopFailure::Failed;
}

StoppedThread::StoppedThread(StoppedThread&& other) noexcept
    : tid_(other.tid_),
      pending_signal_(other.pending_signal_),
      job_control_stopped_(other.job_control_stopped_),
      was_running_(other.was_running_),
      attached_(std::exchange(other.attached_, false)) {}

void StoppedThread::detach() {
  if (!attached_) return;
  attached_ = false;
  // A thread stopped by a signal-delivery-stop gets its signal back; a job-control-stopped one
  // stays stopped (detach does not resume a group stop), as its owner intended.
  ptrace_detach(tid_, pending_signal_);
}

}  // namespace parastack::os
