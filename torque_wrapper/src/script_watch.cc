#include "script_watch.h"

#include <signal.h>

#include <cerrno>
#include <filesystem>

namespace parastack::pbs {

ScriptLook look_for_open_script(pid_t process, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::directory_iterator entries("/proc/" + std::to_string(process) + "/fd", error);
  if (error) {
    // The list cannot be read: the process has ended, unless it can still be signalled (a
    // momentary refusal); a pid taken by another process then ends the watch within its minute.
    return ::kill(process, 0) == 0 || errno == EPERM ? ScriptLook::NotYet : ScriptLook::Ended;
  }
  // An entry that goes between the listing and its reading is a descriptor being closed (the
  // shell closes them all as it starts, exec the close-on-exec ones): not an end. Taken for one,
  // it had the file removed before csh opened it ("job-script: No such file or directory").
  for (; entries != fs::directory_iterator(); entries.increment(error)) {
    std::error_code closed;
    if (fs::read_symlink(entries->path(), closed) == path) return ScriptLook::Open;
  }
  return ScriptLook::NotYet;
}

}  // namespace parastack::pbs
