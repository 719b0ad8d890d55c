#include "os/session_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <system_error>

#include "os/host.h"
#include "os/proc.h"

namespace parastack::os {
namespace {

std::string prefix_here() { return "parastack-monitors." + host_name() + "." + std::to_string(::getuid()) + "."; }

}  // namespace

std::string monitors_session_directory(const std::string& tmp, const ProcessIdentity& owner) {
  return tmp + "/" + prefix_here() + std::to_string(owner.pid.value) + "." + std::to_string(owner.start_ticks);
}

std::string own_monitors_session_directory(const std::string& tmp) {
  const Pid self{::getpid()};
  // Start time 0 if /proc will not say: never swept, still removed by its owner.
  return monitors_session_directory(tmp, identify(self).value_or(ProcessIdentity{self, 0}));
}

int remove_stale_monitors_session_directories(const std::string& tmp) {
  const std::string prefix = prefix_here();
  int removed = 0;
  std::error_code error;
  // increment(error), not ++: a directory that fails half-way read ends the sweep, never a start.
  for (std::filesystem::directory_iterator it(tmp, error), end; !error && it != end; it.increment(error)) {
    const auto& entry = *it;
    const std::string name = entry.path().filename();
    if (name.rfind(prefix, 0) != 0) continue;
    const auto owner = parse_identity(std::string_view(name).substr(prefix.size()), '.');
    struct stat status {};
    // The name says whose; the inode must agree (anyone may create a name in /tmp).
    if (!owner || ::lstat(entry.path().c_str(), &status) != 0 || !S_ISDIR(status.st_mode) ||
        status.st_uid != ::getuid() || is_alive(*owner)) {
      continue;
    }
    std::error_code ignored;
    if (std::filesystem::remove_all(entry.path(), ignored) > 0 && !ignored) ++removed;
  }
  return removed;
}

}  // namespace parastack::os
