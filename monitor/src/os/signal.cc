#include "os/signal.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "os/proc.h"
#include "os/scoped_fd.h"

namespace parastack::os {

// Through syscall(2): Debian 12's <sys/pidfd.h> declares these without C linkage for C++.
int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }
int pidfd_send_signal(int pidfd, int signal) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0));
}

SignalResult send_signal(const ProcessIdentity& process, int signal) {
  const ScopedFd pidfd(pidfd_open(process.pid.value));
  if (!pidfd.valid()) return errno == ESRCH ? SignalResult::Gone : SignalResult::Failed;
  // The pidfd holds whichever process had the pid at pidfd_open. If that is still the one we know
  // (same start time) it is ours; if /proc now shows another, the one we opened has exited and any
  // signal through the pidfd would go nowhere anyway.
  if (!has_pid_now(process)) return SignalResult::Gone;
  if (pidfd_send_signal(pidfd.get(), signal) == 0) return SignalResult::Sent;
  if (errno == ESRCH) return SignalResult::Gone;
  if (errno == EPERM) return SignalResult::Denied;
  return SignalResult::Failed;
}

}  // namespace parastack::os
