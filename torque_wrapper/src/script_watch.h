// csh closes every descriptor above 2 as it starts, so it cannot read a job script from /dev/fd/N:
// pbs_parastack gives it a file in a private directory instead, which a helper removes once the
// shell has the file open (in_job.cc). This is the helper's look at the shell's open files.
#pragma once

#include <sys/types.h>

#include <string>

namespace parastack::pbs {

enum class ScriptLook {
  Open,    // `process` has `path` open: the file may go
  NotYet,  // it lives and has not opened it yet
  Ended,   // it is gone
};

ScriptLook look_for_open_script(pid_t process, const std::string& path);

}  // namespace parastack::pbs
