// The progress page of a rank that runs with libparastack-progress.so preloaded
// (mpi_progress/include/parastack/mpi_progress/page.h): what its MPI calls are waiting for, read
// from the rank's memory with process_vm_readv while it runs. No stop, no ptrace: a reader needs
// only the permission to read the rank's memory (the same user, or CAP_SYS_PTRACE).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "os/ids.h"
#include "parastack/mpi_progress/page.h"

namespace parastack::sampler {

// The rank's page, once it is initialised (after MPI_Init) and of the layout this monitor knows;
// nullopt otherwise, with `problem` saying why in words ("no progress library in the rank", "the
// rank is gone", "permission denied", "the page changed while read", "version 2, this monitor
// reads 1", ...). The page is read twice and kept only when both reads agree byte for byte: the
// rank writes it with plain stores, and a page caught in the middle of a call's entry can be torn.
std::optional<parastack_progress_page> read_progress_page(os::Pid pid, std::string& problem);

// The MPI function a page's `call` names ("MPI_Allreduce"), or "unknown call N".
std::string progress_call_name(std::uint32_t call);

}  // namespace parastack::sampler
