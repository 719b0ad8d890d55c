// Every ptrace call of parastack, and every wait for a traced thread, goes through here (the
// remote memory reads of remote_memory.h share the policy), so the policy for each errno lives in
// one place:
//   ESRCH         -> Gone: the thread exited (or is not stopped for us); never an error to report
//                    as a crash, just a sample that could not be taken.
//   EPERM/EACCES  -> Denied: another user's process, or one already traced (a debugger).
//   EINTR         -> retried here (waitpid); ptrace itself does not return it.
// PTRACE_SEIZE is always called without options: never PTRACE_O_EXITKILL, so that a monitor that
// dies (even by SIGKILL) leaves its targets running; the kernel detaches and resumes them.
#pragma once

#include <sys/user.h>

#include "os/ids.h"

namespace parastack::os {

enum class PtraceStatus { Ok, Gone, Denied, Failed };
const char* to_string(PtraceStatus status);
// The policy above, for an errno of ptrace or of process_vm_readv.
PtraceStatus status_from_errno(int error);

PtraceStatus ptrace_seize(Tid tid);
PtraceStatus ptrace_interrupt(Tid tid);
PtraceStatus ptrace_get_regs(Tid tid, user_regs_struct& regs);
// Detach, delivering `signal` (0: none) if the stop swallowed one that was meant for the target.
// A thread that cannot be detached (Gone: a fatal signal woke it from its stop) is reaped, now or
// by a later call, so that its process's end reaches its parent (see ptrace.cc).
PtraceStatus ptrace_detach(Tid tid, int signal);
// Reaps the threads ptrace_detach could not reap yet; called before every stop, and by a monitor's
// rounds, which may have nothing left to stop once the job's ranks are gone.
void reap_dying_tracees();

// What the seized thread reported after PTRACE_INTERRUPT.
enum class StopKind {
  Interrupted,     // PTRACE_EVENT_STOP from our interrupt: stopped, nothing pending
  GroupStop,       // it is (or went) job-control stopped; it must stay stopped after detach
  SignalDelivery,  // a signal arrived first; re-inject it on detach
  Exited,          // it exited or was killed while we waited
  Gone,            // waitpid says it is no longer ours (ESRCH/ECHILD)
};
struct StopReport {
  StopKind kind = StopKind::Gone;
  int signal = 0;
};
// Waits for the seized thread to stop (waitpid with __WALL, retried on EINTR).
StopReport wait_for_stop(Tid tid);

}  // namespace parastack::os
