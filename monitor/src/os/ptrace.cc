#include "os/ptrace.h"

#include <sys/ptrace.h>
#include <sys/wait.h>

#include <cerrno>
#include <csignal>

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

PtraceStatus ptrace_detach(Tid tid, int signal) {
  return call(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(signal)));
}

StopReport wait_for_stop(Tid tid) {
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
