#include "os/ptrace.h"

#include <sys/ptrace.h>
#include <sys/wait.h>

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <mutex>
#include <vector>

#include "os/proc.h"

namespace parastack::os {

PtraceStatus status_from_errno(int error) {
  switch (error) {
    case ESRCH:
      return PtraceStatus::Gone;
    case EPERM:
    case EACCES:
      return PtraceStatus::Denied;
    default:
      return PtraceStatus::Failed;
  }
}

namespace {

PtraceStatus call(__ptrace_request request, Tid tid, void* address, void* data) {
  errno = 0;
  ::ptrace(request, tid.value, address, data);
  return errno == 0 ? PtraceStatus::Ok : status_from_errno(errno);
}

}  // namespace

const char* to_string(PtraceStatus status) {
  switch (status) {
    case PtraceStatus::Ok:
      return "ok";
    case PtraceStatus::Gone:
      return "exited";
    case PtraceStatus::Denied:
      return "permission denied";
    case PtraceStatus::Failed:
      return "ptrace failed";
  }
  return "?";
}

PtraceStatus ptrace_seize(Tid tid) { return call(PTRACE_SEIZE, tid, nullptr, nullptr); }

PtraceStatus ptrace_interrupt(Tid tid) { return call(PTRACE_INTERRUPT, tid, nullptr, nullptr); }

PtraceStatus ptrace_get_regs(Tid tid, user_regs_struct& regs) { return call(PTRACE_GETREGS, tid, nullptr, &regs); }

namespace {

// Whether the end of `tid` is left to our own wait for a child, not reaped as its tracer: the
// process of a child of ours (the job `parastack run` started, when it is itself a rank), whose
// exit status that wait needs; reaped here, the status would be lost and the job would never be
// seen to end. A thread of such a child is the tracer's to reap: until it is, its process's end is
// not reported at all.
bool end_is_our_childs(pid_t tid) {
  const auto stat = read_stat(Pid{tid});
  if (!stat || stat->parent.value != ::getpid()) return false;
  const auto status = read_status(Pid{tid});
  return !status || status->thread_group == 0 || status->thread_group == tid;
}

// Threads that could not be detached and were not reaped yet: a zombie's tid stays its own until
// its tracer reaps it, so none of these can name another thread meanwhile.
std::mutex dying_mutex;
std::vector<pid_t> dying;

// Reaps `tid` if it has ended; true when it is no longer ours to reap (reaped, or not our tracee).
bool reaped(pid_t tid) {
  if (end_is_our_childs(tid)) return true;
  while (true) {
    int status = 0;
    const pid_t got = ::waitpid(tid, &status, __WALL | WNOHANG);
    if (got < 0 && errno == EINTR) continue;
    if (got == tid && WIFSTOPPED(status)) {
      // A dying thread passes no stop; should one come all the same, it is never left stopped.
      const int pending = (status >> 16) == 0 ? WSTOPSIG(status) : 0;
      ::ptrace(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(pending)));
    }
    return got != 0;  // reaped, let go, or not ours (ECHILD)
  }
}

}  // namespace

PtraceStatus ptrace_detach(Tid tid, int signal) {
  const PtraceStatus detached = call(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(signal)));
  if (detached != PtraceStatus::Gone) return detached;
  // Not in a stop any more: a fatal signal woke it (its process exited from another thread, was
  // killed, or exec'd). Traced, its end is reported to us and not to its parent, and a thread
  // group's leader is not reported at all while one of its threads is an unreaped zombie: until
  // we reap it, the rank's mpirun or slurmstepd waits for a process that is gone, and the job
  // never ends (measured: a parent's wait returned only when the tracer exited). Its exit takes
  // microseconds; one that takes longer (a core dump) is reaped by reap_dying_tracees.
  for (int look = 0; look < 100; ++look) {
    if (reaped(tid.value)) return detached;
    ::usleep(100);
  }
  const std::lock_guard lock(dying_mutex);
  dying.push_back(tid.value);
  return detached;
}

void reap_dying_tracees() {
  const std::lock_guard lock(dying_mutex);
  std::erase_if(dying, reaped);
}

StopReport wait_for_stop(Tid tid) {
  // Looked at first without taking it (WNOWAIT): a child of ours that ended meanwhile is left to our
  // own wait for it (end_is_our_childs), which the waitpid below would have robbed of its status.
  while (true) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(tid.value), &info, WEXITED | WSTOPPED | __WALL | WNOWAIT) == 0) {
      const bool ended = info.si_code == CLD_EXITED || info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED;
      if (ended && end_is_our_childs(tid.value)) return {StopKind::Exited, 0};
      break;
    }
    if (errno == EINTR) continue;
    return {StopKind::Gone, 0};
  }
  int status = 0;
  while (true) {
    const pid_t got = ::waitpid(tid.value, &status, __WALL);
    if (got == tid.value) break;
    if (got < 0 && errno == EINTR) continue;
    return {StopKind::Gone, 0};
  }
  if (WIFEXITED(status) || WIFSIGNALED(status)) return {StopKind::Exited, 0};
  if (!WIFSTOPPED(status)) return {StopKind::Gone, 0};
  const int signal = WSTOPSIG(status);
  const int event = status >> 16;
  if (event == PTRACE_EVENT_STOP) {
    // Under PTRACE_SEIZE a group-stop also reports PTRACE_EVENT_STOP, with the stopping signal.
    const bool group_stop = signal == SIGSTOP || signal == SIGTSTP || signal == SIGTTIN || signal == SIGTTOU;
    return {group_stop ? StopKind::GroupStop : StopKind::Interrupted, 0};
  }
  return {StopKind::SignalDelivery, signal};
}

}  // namespace parastack::os
