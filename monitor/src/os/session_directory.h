// The monitors' own Open MPI session directory. Open MPI 4 removes its user's directory on a node
// (ompi.HOST.UID) once it is empty, so two MPI jobs of one user starting together there can fail
// ("session_dir.c at line 107"): the monitors' MPI job keeps one apart from the job's, named
// $TMPDIR/parastack-monitors.HOST.UID.PID.START after the process whose MPI job it serves (the
// monitors' mpirun, or a monitor started by srun) and that process's start time.
#pragma once

#include <string>

#include "os/ids.h"

namespace parastack::os {

// The directory's path for `owner` under `tmp` (created by Open MPI, not here).
std::string monitors_session_directory(const std::string& tmp, const ProcessIdentity& owner);
// The same for the calling process (which keeps its pid and start time across execve).
std::string own_monitors_session_directory(const std::string& tmp);

// Removes the directories under `tmp` whose process has ended: a job deleted with SIGKILL takes
// the monitors' mpirun with it before Open MPI can clean up, and each such job would leave one per
// node. Only this user's, named for this host (a /tmp shared by containers holds other hosts'),
// and never one whose process is alive with the same start time. Errors are ignored: a directory
// that cannot be removed stays. The number removed.
int remove_stale_monitors_session_directories(const std::string& tmp);

}  // namespace parastack::os
