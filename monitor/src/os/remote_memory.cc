#include "os/remote_memory.h"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace parastack::os {

RemoteRead read_remote(Pid pid, std::uint64_t address, void* buffer, std::size_t length) {
  if (length == 0) return {};
  // process_vm_readv never splits an iovec: one per page makes a partial read stop at the first
  // unmapped page instead of failing whole.
  constexpr std::uint64_t kPage = 4096;
  std::vector<iovec> remote;
  for (std::uint64_t at = address; at < address + length;) {
    const std::uint64_t next = std::min((at & ~(kPage - 1)) + kPage, address + length);
    remote.push_back({reinterpret_cast<void*>(at), next - at});
    at = next;
  }
  iovec local{buffer, length};
  const ssize_t n = ::process_vm_readv(pid.value, &local, 1, remote.data(), remote.size(), 0);
  if (n > 0) return {static_cast<std::size_t>(n), PtraceStatus::Ok};
  if (n == 0) return {0, PtraceStatus::Failed, EFAULT};
  const int error = errno;
  return {0, status_from_errno(error), error};
}

}  // namespace parastack::os
