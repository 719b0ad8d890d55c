// The progress page of a rank that runs with libparastack-progress.so preloaded
// (mpi_progress/include/parastack/mpi_progress/page.h): what its MPI calls are waiting for, read
// from the rank's memory with process_vm_readv while it runs. No stop, no ptrace: a reader needs
// only the permission to read the rank's memory (the same user, or CAP_SYS_PTRACE).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "os/ids.h"
#include "parastack/mpi_progress/page.h"

namespace parastack::sampler {

// The rank's page, once it is initialised (after MPI_Init) and of the layout this monitor knows;
// nullopt otherwise, with `problem` saying why in words ("no progress library in the rank", "the
// rank is gone", "permission denied", "the page changed while read", "version 2, this monitor
// reads 1", ...). The page is read twice and kept (the second read) only when both agree byte for
// byte but for the counts of entries and polls: the rank writes it with plain stores, and a page
// caught in the middle of a call's entry can be torn, whereas a rank polling in vain moves nothing
// else (and must not be left without facts for it).
std::optional<parastack_progress_page> read_progress_page(os::Pid pid, std::string& problem);

// The problem when the rank has no progress library mapped: the report then suggests --mpi-progress.
inline constexpr std::string_view kNoProgressLibrary = "no progress library in the rank";

// The count of MPI calls a rank has completed (the page's `completed`), and whether it polled in
// vain since the previous read, for every sample: where its page lies is found once per process
// (its maps and the library's symbols, also that it has no library), then each call reads the
// page's first 48 bytes. nullopt: no library, a page not yet initialised (before MPI_Init) or of
// another layout, or a rank that is gone. Stasis evidence (stats::RankSnapshot::mpi_completed): a
// rank whose count grew has moved.
class ProgressCounters {
 public:
  struct Counts {
    std::uint64_t completed = 0;
    bool polled = false;  // polls that found nothing since the previous read of this rank
  };
  std::optional<Counts> read(const os::ProcessIdentity& rank);
  void forget(os::Pid pid);

 private:
  struct Where {
    std::uint64_t start_ticks = 0;         // the process it was found in (pids are reused)
    std::optional<std::uint64_t> address;  // nullopt: it has no readable page
    std::optional<std::uint64_t> polls;    // at the previous read
    // When a rank without a page was looked at, and how often: looked at again a few times, in
    // case it was found while the dynamic loader was still mapping its libraries.
    std::chrono::steady_clock::time_point looked_at;
    int looks = 1;
  };
  std::unordered_map<int, Where> where_;
};

// The MPI function a page's `call` names ("MPI_Allreduce"), or "unknown call N".
std::string progress_call_name(std::uint32_t call);

}  // namespace parastack::sampler
