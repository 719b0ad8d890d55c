#include "parastack/stats/verification.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>

namespace parastack::stats {
namespace {

// MPI's names are ASCII: no locale (std::tolower was a quarter of the simulator's time).
constexpr char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool same_letters(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return ascii_lower(x) == ascii_lower(y); });
}

// "PMPI_Testall" -> "Testall", "mpi_test_" -> "test", "MPI_IPROBE" -> "IPROBE": compared without
// regard to case, and without a copy (the simulator asks millions of times).
std::string_view entry_name(std::string_view function) {
  if (function.size() >= 5 && same_letters(function.substr(0, 5), "pmpi_")) {
    function.remove_prefix(5);
  } else if (function.size() >= 4 && same_letters(function.substr(0, 4), "mpi_")) {
    function.remove_prefix(4);
  }
  while (!function.empty() && function.back() == '_') function.remove_suffix(1);  // Fortran bindings
  return function;
}

bool same_function(std::string_view a, std::string_view b) { return same_letters(entry_name(a), entry_name(b)); }

bool is_progress(const RankSnapshot& from, const RankSnapshot& to) {
  // The progress library's count: an MPI call completed in between (a polling rank whose test
  // succeeded is working, not waiting). A count that went down is another process's page.
  if (from.mpi_completed && to.mpi_completed && *to.mpi_completed > *from.mpi_completed) return true;
  if (from.state == RankState::InMpi && to.state == RankState::InMpi) {
    if (same_function(from.mpi_function, to.mpi_function)) {
      // The same call from another call site (both paths known) is a step through the code too.
      return from.path != 0 && to.path != 0 && from.path != to.path && !is_polling_function(from.mpi_function);
    }
    return !(is_polling_function(from.mpi_function) && is_polling_function(to.mpi_function));
  }
  if (from.state == RankState::InMpi && to.state == RankState::OutMpi) {
    return !is_polling_function(from.mpi_function);
  }
  if (from.state == RankState::OutMpi && to.state == RankState::InMpi) {
    return !is_polling_function(to.mpi_function);
  }
  return false;  // OUT -> OUT: a spinning rank also moves between its own functions
}

}  // namespace

std::string_view to_string(RankState state) {
  switch (state) {
    case RankState::InMpi:
      return "IN_MPI";
    case RankState::OutMpi:
      return "OUT_MPI";
    case RankState::Unknown:
      return "UNKNOWN";
  }
  return "?";
}

bool is_polling_function(std::string_view mpi_function) {
  if (!mpi_function.starts_with("MPI_") && !mpi_function.starts_with("PMPI_") && !mpi_function.starts_with("mpi_") &&
      !mpi_function.starts_with("pmpi_")) {
    return false;
  }
  static constexpr std::array<std::string_view, 5> kPolling{"test", "testany", "testsome", "testall", "iprobe"};
  const std::string_view name = entry_name(mpi_function);
  return std::any_of(kPolling.begin(), kPolling.end(),
                     [&](std::string_view polling) { return same_letters(name, polling); });
}

namespace {

// The entry's name without its prefix, when it is an MPI entry point at all.
std::optional<std::string_view> mpi_entry_name(std::string_view function) {
  const bool mpi = function.starts_with("MPI_") || function.starts_with("PMPI_") || function.starts_with("mpi_") ||
                   function.starts_with("pmpi_");
  if (!mpi) return std::nullopt;
  return entry_name(function);
}

}  // namespace

bool is_startup_function(std::string_view mpi_function) {
  if (mpi_function == "ompi_mpi_init") return true;
  const auto name = mpi_entry_name(mpi_function);
  return name && (same_letters(*name, "init") || same_letters(*name, "init_thread"));
}

bool is_shutdown_function(std::string_view mpi_function) {
  if (mpi_function == "ompi_mpi_finalize") return true;
  const auto name = mpi_entry_name(mpi_function);
  return name && same_letters(*name, "finalize");
}

namespace {

bool in_polling_call(const RankSnapshot& s) {
  return s.state == RankState::InMpi && is_polling_function(s.mpi_function) && s.path != 0;
}

// Calls moved(evidence) for every step of rank i's snapshots that is progress (RankMovement).
template <typename Moved>
void for_each_move(std::size_t i, const std::vector<RankSnapshot>& snapshots, Moved moved) {
  RankMovement movement;
  for (std::size_t at = 0; at < snapshots.size(); ++at) {
    if (auto move = movement.step(snapshots[at])) {
      move->rank_index = i;
      move->at = at;
      moved(*move);
    }
  }
}

}  // namespace

// Two known snapshots in a row that is_progress() accepts, or the rank polling at a place other
// than where it last polled, whatever was sampled in between (its loop's own work, most often).
// With the progress library's counts on both, those alone decide: a wait that ended completed a
// call, so a rank polling at two places with its count standing is in a loop that polls from both.
std::optional<ProgressEvidence> RankMovement::step(const RankSnapshot& sampled) {
  if (sampled.state == RankState::Unknown) return std::nullopt;
  // A rank at work outside MPI beside a thread in MPI is where that thread is: its working threads
  // going from one function to another are no step (a single-threaded rank's spin is none), and
  // read in the rank's place they looked like the wait of its thread in MPI ending.
  std::optional<RankSnapshot> own;
  if (sampled.at_work_outside) own.emplace(sampled).path = sampled.mpi_thread_path;
  const RankSnapshot& snapshot = own ? *own : sampled;
  // Where it was last seen (the common case, and so where it last polled if it polls): no move.
  if (previous_ && previous_->state == snapshot.state && previous_->path == snapshot.path &&
      previous_->mpi_completed == snapshot.mpi_completed && previous_->mpi_polled == snapshot.mpi_polled &&
      previous_->mpi_function == snapshot.mpi_function) {
    return std::nullopt;
  }
  std::optional<ProgressEvidence> move;
  if (previous_ && is_progress(*previous_, snapshot)) {
    move = ProgressEvidence{0, *previous_, snapshot};
  } else if (polled_ && in_polling_call(snapshot) && snapshot.path != polled_->path &&
             !(polled_->mpi_completed && snapshot.mpi_completed)) {
    move = ProgressEvidence{0, *polled_, snapshot, 0, true};
  }
  previous_ = snapshot;
  if (in_polling_call(snapshot)) polled_ = snapshot;
  return move;
}

std::optional<ProgressEvidence> find_progress(const std::vector<std::vector<RankSnapshot>>& series) {
  std::optional<ProgressEvidence> first;
  for (std::size_t i = 0; i < series.size() && !first; ++i) {
    for_each_move(i, series[i], [&](const ProgressEvidence& move) {
      if (!first) first = move;
    });
  }
  return first;
}

std::optional<ProgressEvidence> find_last_progress(const std::vector<std::vector<RankSnapshot>>& series) {
  std::optional<ProgressEvidence> last;
  for (std::size_t i = 0; i < series.size(); ++i) {
    for_each_move(i, series[i], [&](const ProgressEvidence& move) {
      if (!last || move.at > last->at) last = move;
    });
  }
  return last;
}

std::vector<std::size_t> progress_columns(const std::vector<std::vector<RankSnapshot>>& series) {
  std::vector<std::size_t> columns;
  for (std::size_t i = 0; i < series.size(); ++i) {
    for_each_move(i, series[i], [&](const ProgressEvidence& move) { columns.push_back(move.at); });
  }
  std::sort(columns.begin(), columns.end());
  columns.erase(std::unique(columns.begin(), columns.end()), columns.end());
  return columns;
}

std::optional<WorkProgress> find_work(const std::vector<std::optional<WorkCounters>>& before,
                                      const std::vector<std::optional<WorkCounters>>& after, std::uint64_t min_io,
                                      std::uint64_t min_growth) {
  // An I/O count that went down is not this rank's (its pid was reused): no evidence; a resident
  // size that went down is memory given back: no evidence either.
  const auto grew = [](std::uint64_t from, std::uint64_t to, std::uint64_t least) {
    return to >= from && to - from >= least;
  };
  for (std::size_t r = 0; r < std::min(before.size(), after.size()); ++r) {
    if (!before[r] || !after[r]) continue;
    if (grew(before[r]->io_bytes, after[r]->io_bytes, min_io)) {
      return WorkProgress{r, WorkProgress::Kind::Io, after[r]->io_bytes - before[r]->io_bytes};
    }
    if (grew(before[r]->resident_bytes, after[r]->resident_bytes, min_growth)) {
      return WorkProgress{r, WorkProgress::Kind::Memory, after[r]->resident_bytes - before[r]->resident_bytes};
    }
  }
  return std::nullopt;
}

std::string describe_work(const WorkProgress& work) {
  char mib[32];
  std::snprintf(mib, sizeof mib, "%.1f MiB", static_cast<double>(work.bytes) / (1 << 20));
  const std::string rank = "rank " + std::to_string(work.rank);
  if (work.kind == WorkProgress::Kind::Io) return rank + " is doing I/O: " + mib;
  return rank + " is filling new memory: +" + mib + " resident";
}

std::optional<CpuStarvation> find_starvation(const std::vector<std::optional<WorkCounters>>& before,
                                             const std::vector<std::optional<WorkCounters>>& after,
                                             double max_cpu_fraction, double min_waiting) {
  std::map<int, CpuStarvation> nodes;
  for (std::size_t r = 0; r < std::min(before.size(), after.size()); ++r) {
    if (!before[r] || !after[r]) continue;
    const WorkCounters& from = *before[r];
    const WorkCounters& to = *after[r];
    // An unknown age, a clock that went back, or counters that went down (a reused pid): no evidence.
    if (from.age_ns == 0 || to.age_ns <= from.age_ns || to.cpu_ns < from.cpu_ns ||
        to.run_delay_ns < from.run_delay_ns || from.node != to.node)
      continue;
    const double window = static_cast<double>(to.age_ns - from.age_ns);
    if (window < kStarvationWindowSeconds * 1e9) continue;
    CpuStarvation& node = nodes.try_emplace(to.node, CpuStarvation{r, 0, 0, 0, 0, window / 1e9}).first->second;
    ++node.ranks;
    node.ran += static_cast<double>(to.cpu_ns - from.cpu_ns) / window;
    node.usually_ran += static_cast<double>(from.cpu_ns) / static_cast<double>(from.age_ns);
    node.waited += static_cast<double>(to.run_delay_ns - from.run_delay_ns) / window;  // summed, averaged below
  }
  for (auto& entry : nodes) {
    CpuStarvation& node = entry.second;
    node.waited /= node.ranks;
    if (node.usually_ran > 0 && node.waited >= min_waiting && node.ran <= max_cpu_fraction * node.usually_ran) {
      return node;
    }
  }
  return std::nullopt;
}

std::string describe_starvation(const CpuStarvation& starved) {
  char text[224];
  std::snprintf(text, sizeof text,
                "the node of rank %zu is short of CPU: its %d rank%s ran on %.2f CPUs in the last %.1f s (usually on "
                "%.2f) and waited for one %.0f %% of the time",
                starved.rank, starved.ranks, starved.ranks == 1 ? "" : "s", starved.ran, starved.window_seconds,
                starved.usually_ran, 100 * std::min(starved.waited, 1.0));
  return text;
}

std::vector<int> persistently_out_ranks(const std::vector<std::vector<RankState>>& checks) {
  std::vector<int> faulty;
  if (checks.empty()) return faulty;
  const std::size_t ranks = checks.front().size();
  for (std::size_t r = 0; r < ranks; ++r) {
    bool known = false, always_out = true;
    for (const auto& check : checks) {
      const RankState state = r < check.size() ? check[r] : RankState::Unknown;
      if (state == RankState::Unknown) continue;
      known = true;
      always_out = always_out && state == RankState::OutMpi;
    }
    if (known && always_out) faulty.push_back(static_cast<int>(r));
  }
  return faulty;
}

}  // namespace parastack::stats
