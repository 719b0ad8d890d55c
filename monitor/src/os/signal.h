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

}  // namespace parastack::os
