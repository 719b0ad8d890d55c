// Reading another process's memory while it runs or is stopped (process_vm_readv), with the errno
// policy of ptrace.h: the sampler copies a stopped thread's stack top and reads a flag of the MPI
// library, and must tell "the rank is gone" and "not ours" from "that page is not mapped".
#pragma once

#include <cstddef>
#include <cstdint>

#include "os/ids.h"
#include "os/ptrace.h"

namespace parastack::os {

struct RemoteRead {
  std::size_t bytes = 0;  // read from the start of the range; a read stops at the first unmapped page
  // Ok when any byte was read; otherwise why not: Gone (ESRCH), Denied (EPERM), Failed (EFAULT:
  // nothing mapped at the address, or anything else).
  PtraceStatus status = PtraceStatus::Ok;
  int error = 0;  // errno when nothing was read
};

RemoteRead read_remote(Pid pid, std::uint64_t address, void* buffer, std::size_t length);

}  // namespace parastack::os
