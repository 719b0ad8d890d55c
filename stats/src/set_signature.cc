#include "parastack/stats/set_signature.h"

#include <algorithm>

#include "parastack/stats/random.h"

namespace parastack::stats {
namespace {

constexpr std::uint64_t kSignatureSeed = 0x9e3779b97f4a7c15ULL;

// A rank at work outside MPI on another thread is never waiting, whatever its comm thread polls.
bool in_polling_call(const RankSnapshot& s) {
  return s.state == RankState::InMpi && !s.at_work_outside && is_polling_function(s.mpi_function);
}

std::uint64_t add_rank(std::uint64_t signature, std::size_t index, std::uint64_t path) {
  return mix64(signature ^ mix64(index + 1) ^ path);
}

// Where the rank is for stillness: its path; with the progress library also how many MPI calls it
// has completed, so a rank that completed one between two samples moved even if it is back at the
// same call site (a loop around one MPI call). A busy-waiting rank's count is all that says whether
// its wait ended: whichever polling call, loop code or work between polls a sample finds it in, it
// has not moved while its count stands.
// `path` is the rank's path, or the place of the loop it goes round (RankLoop).
std::uint64_t place_of(const RankSnapshot& s, std::uint64_t path, bool busy_waiting) {
  if (!s.mpi_completed) return path;
  constexpr std::uint64_t kCounted = 0x70726f6772657373ULL, kWaiting = 0x77616974696e6721ULL;
  return mix64((busy_waiting ? kWaiting : path) ^ mix64(*s.mpi_completed ^ kCounted));
}

// 0 means unknown and kEveryoneWaiting no active rank: no signature may be either.
std::uint64_t finish(std::uint64_t signature) {
  return signature == 0 || signature == kEveryoneWaiting ? signature + 1 : signature;
}

}  // namespace

std::uint64_t RankLoop::step(const RankSnapshot& s, bool at_work,
                             const std::unordered_set<std::uint64_t>& polling_places) {
  if (!at_work || s.path == 0) {
    count_ = 0;
    loop_ = 0;
    return s.path;
  }
  const auto within = [](const Seen& seen, std::uint64_t loop) {
    return seen.path == loop || std::ranges::find(seen.enclosing, loop) != seen.enclosing.end();
  };
  // A loop around a polling call is a poller's wait, whatever work it calls: never a loop here.
  const auto near_a_poll = [&](const Seen& seen) {
    return polling_places.contains(seen.path) ||
           std::ranges::any_of(seen.enclosing, [&](std::uint64_t e) { return polling_places.contains(e); });
  };
  const Seen now{s.path, s.enclosing};
  if (count_ == kSamples) std::move(recent_.begin() + 1, recent_.end(), recent_.begin());
  recent_[std::min(count_, kSamples - 1)] = now;
  count_ = std::min(count_ + 1, kSamples);
  if (loop_ != 0 && within(now, loop_) && !near_a_poll(now)) return loop_;
  loop_ = 0;
  if (count_ < kSamples) return s.path;
  // Back at a place it left: seen there before, and elsewhere since.
  const auto last = recent_.end() - 1;
  const auto there = std::find_if(recent_.begin(), last, [&](const Seen& e) { return e.path == now.path; });
  const bool came_back = there != last && std::any_of(there, last, [&](const Seen& e) { return e.path != now.path; });
  if (!came_back || std::any_of(recent_.begin(), recent_.end(), near_a_poll)) return s.path;
  // The innermost function that every one of these samples stood in, or called a helper from.
  std::array<std::uint64_t, 1 + kEnclosingPlaces> candidates{now.path};
  std::ranges::copy(now.enclosing, candidates.begin() + 1);
  for (const std::uint64_t candidate : candidates) {
    if (candidate == 0) continue;
    if (std::all_of(recent_.begin(), recent_.end(), [&](const Seen& e) { return within(e, candidate); })) {
      loop_ = candidate;
      return loop_;
    }
  }
  return s.path;
}

bool SetSignatures::busy_waiting(const RankSnapshot& s) const {
  return in_polling_call(s) ||
         (!s.at_work_outside && s.path != 0 && s.state != RankState::Unknown && is_polling_place(s.path));
}

// Ranks whose path is unknown are left out of the signatures, as they are left out of S when their
// state is (an unwind that stopped short: docs/sampler.md); which ranks are known is part of the
// signature, so a rank that comes and goes never looks still. With fewer than half the set known a
// signature is 0: too little to call the set still.
Observation SetSignatures::observe(double t, int set, const std::vector<RankSnapshot>& targets) {
  for (const auto& s : targets) {
    if (in_polling_call(s) && s.path != 0 && polling_places_.size() < kMaxPollingPlaces) {
      polling_places_.insert(s.path);
    }
  }
  auto& loops = loops_[set];
  loops.resize(targets.size());
  Observation o{t, set, 0, 0};
  std::uint64_t path = kSignatureSeed, active_path = kSignatureSeed;
  std::size_t known = 0, waiting = 0, active = 0, counts = 0, uncounted = 0, finished = 0;
  bool computing = false;  // some rank outside MPI that is not busy-waiting, placed or not
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const auto& s = targets[i];
    o.n_out += s.state == RankState::OutMpi ? 1 : 0;
    o.n += s.state != RankState::Unknown ? 1 : 0;
    o.polling |= in_polling_call(s);
    if (s.state == RankState::InMpi && is_shutdown_function(s.mpi_function)) {
      ++finished;  // no path (the sampler gives it none): it sits there until the others come
      continue;
    }
    const bool waits = busy_waiting(s) || (!s.at_work_outside && s.mpi_completed && s.mpi_polled);
    const bool at_work = (s.state == RankState::OutMpi && !waits) || s.at_work_outside;
    computing |= at_work;
    const std::uint64_t where = loops[i].step(s, at_work, polling_places_);
    o.at_work_outside += s.at_work_outside ? 1 : 0;
    o.waiting_out += s.state == RankState::OutMpi && waits ? 1 : 0;
    counts += s.mpi_completed ? 1 : 0;
    const bool placed = s.path != 0 || (waits && s.mpi_completed);  // place_of() knows where it is
    if (waits && !s.mpi_completed) {
      ++waiting;
    } else if (placed) {
      // Active: a rank outside a polling loop, or a busy-waiting one whose count tells whether it
      // is still waiting (it then counts as in MPI, as a rank blocked in a receive does).
      ++active;
      active_path = add_rank(active_path, i, place_of(s, where, waits));
      o.active_out += s.state == RankState::OutMpi && !waits ? 1 : 0;
    }
    if (!placed) continue;
    ++known;
    uncounted += s.mpi_completed ? 0 : 1;
    path = add_rank(path, i, place_of(s, where, waits));
  }
  const auto enough = [&](std::size_t count) { return count > 0 && 2 * count >= targets.size(); };
  o.path = enough(known) ? finish(path) : 0;
  o.counted = counts > 0 && waiting == 0 && uncounted == 0;
  auto& previous = previous_completed_[set];
  for (std::size_t i = 0; i < targets.size() && i < previous.size(); ++i) {
    o.progressed |= previous[i] && targets[i].mpi_completed && *targets[i].mpi_completed != *previous[i];
  }
  previous.resize(targets.size());
  for (std::size_t i = 0; i < targets.size(); ++i) previous[i] = targets[i].mpi_completed;
  // Finished ranks (in MPI_Finalize) make the active signature readable: beside ranks that all
  // wait in MPI, a rank blocked in a receive that a finished rank never sent (the classic
  // last-message hang) is watched like any other. Beside a rank at work outside MPI they make the
  // observation the job's serial end, which nothing judges.
  o.finished = static_cast<int>(finished);
  o.serial_end = finished > 0 && computing;
  o.active_path = !enough(active + waiting + finished) ? 0 : active > 0 ? finish(active_path) : kEveryoneWaiting;
  if (has_active_rank(o)) {
    o.active_ranks = static_cast<int>(active);
  } else {
    o.active_out = 0;
  }
  return o;
}

}  // namespace parastack::stats
