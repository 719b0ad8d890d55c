#include "sampler/progress_reader.h"

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "os/proc.h"
#include "os/remote_memory.h"
#include "sampler/elf_symbols.h"

namespace parastack::sampler {
namespace {

constexpr std::string_view kLibraryPrefix = "libparastack-progress";
constexpr std::string_view kDeleted = " (deleted)";

bool is_progress_library(const std::string& path) {
  const auto slash = path.rfind('/');
  return std::string_view(path).substr(slash == std::string::npos ? 0 : slash + 1).starts_with(kLibraryPrefix);
}

// The library's symbols, by file: every rank of a job maps the same one. Keyed by inode too, so a
// library rebuilt in place is read again.
std::shared_ptr<const ElfSymbols> library_symbols(const std::string& path, std::uint64_t inode) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::uint64_t>, std::shared_ptr<const ElfSymbols>> cache;
  std::lock_guard lock(mutex);
  auto [it, inserted] = cache.try_emplace({path, inode});
  if (inserted) it->second = ElfSymbols::load(path);
  return it->second;
}

std::string remote_problem(os::PtraceStatus status, int error) {
  switch (status) {
    case os::PtraceStatus::Gone:
      return "the rank is gone";
    case os::PtraceStatus::Denied:
      return "permission denied";
    default:
      return std::string("cannot read the page: ") + std::strerror(error);
  }
}

// Where the rank's page is: the library's symbol, relocated by the mapping that holds it.
std::optional<std::uint64_t> page_address(os::Pid pid, std::string& problem) {
  const auto maps = os::read_maps(pid);
  if (!maps) {
    const int error = errno;
    problem = error == ENOENT || error == ESRCH ? "the rank is gone"
              : error == EACCES || error == EPERM
                  ? "permission denied"
                  : "cannot read /proc/" + std::to_string(pid.value) + "/maps: " + std::strerror(error);
    return std::nullopt;
  }
  std::vector<const os::Mapping*> library;
  for (const auto& m : *maps) {
    if (is_progress_library(m.path) && (library.empty() || m.path == library.front()->path)) library.push_back(&m);
  }
  if (library.empty()) {
    problem = kNoProgressLibrary;
    return std::nullopt;
  }
  const std::string& path = library.front()->path;
  if (path.ends_with(kDeleted)) {
    problem = "the rank's progress library was deleted from disk: " + path;
    return std::nullopt;
  }
  const auto symbols = library_symbols(path, library.front()->inode);
  if (!symbols) {
    problem = "cannot read the progress library " + path;
    return std::nullopt;
  }
  const auto vaddr = symbols->address_of(PARASTACK_PROGRESS_SYMBOL);
  if (!vaddr) {
    problem = "the progress library " + path + " has no symbol " PARASTACK_PROGRESS_SYMBOL;
    return std::nullopt;
  }

  // The page is data: it lies in a later (read-write) mapping of the file than the code, and each
  // mapping's own bias says whether it holds it.
  std::optional<std::uint64_t> address;
  for (const os::Mapping* m : library) {
    const std::uint64_t at = *vaddr + symbols->load_bias(m->start, m->offset);
    if (m->contains(at) && m->contains(at + sizeof(parastack_progress_page) - 1)) {
      address = at;
      break;
    }
  }
  if (!address) problem = "the progress page is not mapped in the rank";
  return address;
}

}  // namespace

std::optional<parastack_progress_page> read_progress_page(os::Pid pid, std::string& problem) {
  const auto address = page_address(pid, problem);
  if (!address) return std::nullopt;
  parastack_progress_page first{}, second{};
  for (auto* page : {&first, &second}) {
    const auto read = os::read_remote(pid, *address, page, sizeof *page);
    if (read.status != os::PtraceStatus::Ok) {
      problem = remote_problem(read.status, read.error);
      return std::nullopt;
    }
    if (read.bytes != sizeof *page) {
      problem = "the page was read only in part (" + std::to_string(read.bytes) + " bytes)";
      return std::nullopt;
    }
  }
  // A rank polling in vain between the reads moves only its counts of entries and polls; anything
  // else that changed (a call entered or left, a test that found its message) may be torn.
  parastack_progress_page same_counts = second;
  same_counts.entries = first.entries;
  same_counts.polls = first.polls;
  if (std::memcmp(&first, &same_counts, sizeof first) != 0) {
    problem = "the page changed while read";
    return std::nullopt;
  }
  first = second;
  if (first.magic != PARASTACK_PROGRESS_MAGIC) {
    problem = first.magic == 0 ? "the page is not initialised (before MPI_Init, not Open MPI, or MPI called past "
                                 "the library's wrappers, as through ctypes)"
                               : "the page has no valid magic number";
    return std::nullopt;
  }
  if (first.version != PARASTACK_PROGRESS_VERSION) {
    problem = "version " + std::to_string(first.version) + ", this monitor reads " +
              std::to_string(PARASTACK_PROGRESS_VERSION);
    return std::nullopt;
  }
  if (first.bytes != sizeof(parastack_progress_page)) {
    problem = "the page has " + std::to_string(first.bytes) + " bytes, this monitor reads " +
              std::to_string(sizeof(parastack_progress_page));
    return std::nullopt;
  }
  return first;
}

std::string progress_call_name(std::uint32_t call) {
#define PARASTACK_PROGRESS_CALL_NAME(name) #name,
  static constexpr const char* kNames[] = {PARASTACK_PROGRESS_CALLS(PARASTACK_PROGRESS_CALL_NAME)};
#undef PARASTACK_PROGRESS_CALL_NAME
  static_assert(std::size(kNames) == PARASTACK_CALL_COUNT);
  if (call < std::size(kNames)) return kNames[call];
  return "unknown call " + std::to_string(call);
}

std::optional<ProgressCounters::Counts> ProgressCounters::read(const os::ProcessIdentity& rank) {
  // A preloaded library is mapped before main(): a rank without it after a few looks has none, and
  // its maps are not read again with every sample for the rest of the job.
  constexpr auto kLookAgain = std::chrono::seconds(10);
  constexpr int kLooks = 3;
  const auto now = std::chrono::steady_clock::now();
  auto it = where_.find(rank.pid.value);
  const bool new_process = it == where_.end() || it->second.start_ticks != rank.start_ticks;
  if (new_process || (!it->second.address && it->second.looks < kLooks && now - it->second.looked_at >= kLookAgain)) {
    const int looks = new_process ? 1 : it->second.looks + 1;
    std::string problem;
    it = where_
             .insert_or_assign(rank.pid.value,
                               Where{rank.start_ticks, page_address(rank.pid, problem), std::nullopt, now, looks})
             .first;
  }
  if (!it->second.address) return std::nullopt;
  // The page's head up to `polls`: one read, 8-byte aligned fields that the rank writes whole.
  struct Head {
    std::uint64_t magic;
    std::uint32_t version, bytes;
    std::int32_t world_rank, world_size;
    std::uint64_t entries, completed, polls;
  } head{};
  static_assert(offsetof(Head, completed) == offsetof(parastack_progress_page, completed));
  static_assert(offsetof(Head, polls) == offsetof(parastack_progress_page, polls));
  const auto read = os::read_remote(rank.pid, *it->second.address, &head, sizeof head);
  if (read.status != os::PtraceStatus::Ok || read.bytes != sizeof head) return std::nullopt;
  if (head.magic != PARASTACK_PROGRESS_MAGIC || head.version != PARASTACK_PROGRESS_VERSION ||
      head.bytes != sizeof(parastack_progress_page)) {
    return std::nullopt;
  }
  const auto previous = std::exchange(it->second.polls, head.polls);
  return Counts{head.completed, previous && head.polls > *previous};
}

void ProgressCounters::forget(os::Pid pid) { where_.erase(pid.value); }

}  // namespace parastack::sampler
