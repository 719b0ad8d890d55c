// Signals to a process by identity, never by a bare pid: the pid of a rank that exited may already
// belong to somebody else's process, and a kill() to it would hit that process.
#pragma once

#include "os/ids.h"

namespace parastack::os {

enum class SignalResult {
  Sent,
  Gone,    // the process has exited (or its pid now names another process: not signalled)
  Denied,  // not ours to signal
  Failed,  // anything else (errno set)
};

// Sends `signal` through a pidfd, after checking that the pidfd holds the process that `process`
// names (its start time). From pidfd_open on, the kernel delivers to that process or to nobody.
SignalResult send_signal(const ProcessIdentity& process, int signal);

// The two system calls, as the kernel returns them (-1 and errno on failure); pidfd_send_signal
// is async-signal-safe (a signal handler may pass a signal on with it).
int pidfd_open(pid_t pid);
int pidfd_send_signal(int pidfd, int signal);

}  // namespace parastack::os
