#include "parastack/stats/stasis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "parastack/stats/binomial.h"

namespace parastack::stats {
namespace {

// The first bounds need a few pairs; before that the model cannot test (c+ = s+ = 1).
constexpr std::uint64_t kFirstRefreshPairs = 8;

// How many more observations, each bounded by `each`, take a run's bound from `bound` to at most
// alpha: 0 when it is there already; none when that takes a billion or more (or never).
std::optional<int> steps_to_fire(double bound, double each, double alpha) {
  if (!(alpha > 0)) return std::nullopt;
  if (bound <= alpha) return 0;
  if (!(each < 1)) return std::nullopt;
  const double steps = std::max(1.0, std::ceil(std::log(alpha / bound) / std::log(each) - 1e-9));
  if (!(steps < 1e9)) return std::nullopt;
  return static_cast<int>(steps);
}

}  // namespace

std::string bound_formula(const StasisDecision& d) {
  std::ostringstream out;
  out << d.first_bound;
  const int shallow = std::min(d.streak - 1, d.steps);
  for (int g = 0; g < shallow; ++g) out << " x " << d.step_bounds[g];
  if (d.streak - 1 > shallow) out << " x " << d.continue_bound << "^" << d.streak - 1 - shallow;
  return out.str();
}

StasisModel::StasisModel(StasisConfig config, double beta) : config_(config), beta_(beta) {
  if (config_.run_memory < 1 || config_.run_memory > kMaxRunMemory) {
    throw std::invalid_argument("stasis run_memory must be 1 to " + std::to_string(kMaxRunMemory));
  }
}

int StasisModel::depth_class(int depth) const { return std::min(depth, config_.run_memory - 1); }

void StasisModel::commit(const Pair& pair) {
  committed_.push_back(pair);
  ++first_trials_;
  first_hits_ += pair.still ? 1 : 0;
  if (pair.previous_still == true) {
    ++next_trials_;
    next_hits_ += pair.still ? 1 : 0;
  }
  const int g = depth_class(pair.depth);
  if (g > 0) {
    ++class_trials_[g];
    class_hits_[g] += pair.still ? 1 : 0;
  }
  Place& place = places_[pair.from];
  ++place.all.trials;
  place.all.hits += pair.still ? 1 : 0;
  ++place.by_depth[g].trials;
  place.by_depth[g].hits += pair.still ? 1 : 0;
  if (config_.window != 0 && committed_.size() > config_.window) {
    const Pair& old = committed_.front();
    --first_trials_;
    first_hits_ -= old.still ? 1 : 0;
    if (old.previous_still == true) {
      --next_trials_;
      next_hits_ -= old.still ? 1 : 0;
    }
    const int old_g = depth_class(old.depth);
    if (old_g > 0) {
      --class_trials_[old_g];
      class_hits_[old_g] -= old.still ? 1 : 0;
    }
    auto it = places_.find(old.from);
    if (--it->second.all.trials == 0) {
      places_.erase(it);
    } else {
      it->second.all.hits -= old.still ? 1 : 0;
      --it->second.by_depth[old_g].trials;
      it->second.by_depth[old_g].hits -= old.still ? 1 : 0;
    }
    committed_.pop_front();
  }
  ++added_since_refresh_;
}

double StasisModel::own_bound(Counts& counts) {
  if (counts.bound_refresh != refreshes_) {
    // Which place's bound gets used is not known in advance: the budget is shared by all of them
    // (each place's first-order bound, and one per depth class when the chain remembers runs).
    const int per_place = config_.run_memory == 1 ? 1 : config_.run_memory;
    const double keys = static_cast<double>(places_.size()) * per_place;
    counts.bound = binomial_upper_bound(counts.hits, counts.trials, beta_ * refresh_share(refreshes_ - 1) / 2 / keys);
    counts.bound_refresh = refreshes_;
  }
  return counts.bound;
}

double StasisModel::first_order_bound(Place* place) {
  // A place the job left every time it was seen (a hung set's rare configuration, seen a few times
  // in passing) is no stickier than one never seen: the pooled bound, not its own few trials'
  // bound, which is near 1 and would make a place seen three times less suspicious than a new one.
  if (place == nullptr || place->all.hits == 0) return continue_bound_;
  return std::max(continue_bound_, own_bound(place->all));
}

double StasisModel::place_bound(std::uint64_t path, int g) {
  auto it = places_.find(path);
  if (it == places_.end() || refreshes_ == 0) return continue_bound_;
  Place& place = it->second;
  if (config_.run_memory == 1) return first_order_bound(&place);
  // Never seen this deep into a run at this place: as the first-order chain judges it. Seen, but
  // always left from there: its own bound where the trials make it the tighter one. Seen staying:
  // its own bound, floored by all places' at this depth.
  Counts& counts = place.by_depth[g];
  if (counts.trials == 0) return first_order_bound(&place);
  const double own = std::max(class_bound_[g], own_bound(counts));
  return counts.hits == 0 ? std::min(first_order_bound(&place), own) : own;
}

void StasisModel::commit_held() {
  for (const auto& pair : held_) commit(pair);
  held_.clear();
}

void StasisModel::maybe_refresh() {
  // Bounds are refreshed at a few points only (the sample count grew by a quarter, or a quarter of
  // the window was replaced), so the union bound over refreshes costs little (refresh_share).
  const bool grown =
      first_trials_ >= kFirstRefreshPairs && (refreshes_ == 0 || 4 * first_trials_ >= 5 * trials_at_refresh_ ||
                                              (config_.window != 0 && 4 * added_since_refresh_ >= config_.window));
  if (!grown) return;
  const double beta = beta_ * refresh_share(refreshes_) / 4;  // c and s a quarter each; places half
  first_bound_ = binomial_upper_bound(first_hits_, first_trials_, beta);
  // s's quarter: pooled continuation, and (run_memory > 1) pooled by depth class, half and half.
  const int classes = config_.run_memory - 1;
  continue_bound_ = binomial_upper_bound(next_hits_, next_trials_, classes > 0 ? beta / 2 : beta);
  for (int g = 1; g <= classes; ++g) {
    class_bound_[g] = binomial_upper_bound(class_hits_[g], class_trials_[g], beta / 2 / classes);
  }
  ++refreshes_;
  trials_at_refresh_ = first_trials_;
  added_since_refresh_ = 0;
}

StasisDecision StasisModel::observe(const Observation& o, double test_alpha) {
  // The job's serial end is no evidence, as a late observation is not (Observation::serial_end).
  if (o.serial_end) return observe_late(o);
  StasisDecision d;
  d.known = o.path != 0 && previous_path_ != 0;
  d.still = d.known && o.path == previous_path_ && few_outside(o);
  const double stopped_at = previous_t_;
  const std::uint64_t previous_path_before = previous_path_;
  previous_path_ = o.path;
  previous_t_ = o.t;

  if (!d.known) {
    // Not evidence either way: the run (if any) ends, and the chain of pairs is broken.
    commit_held();
    previous_still_.reset();
    depth_ = 0;
  } else {
    const Pair pair{o.t, d.still, previous_still_, previous_path_before, depth_};
    previous_still_ = d.still;
    depth_ = d.still ? depth_ + 1 : 0;
    if (d.still) {
      if (held_.empty()) held_onset_ = stopped_at;
      held_.push_back(pair);
    } else {
      commit_held();
      commit(pair);
    }
  }
  maybe_refresh();
  describe_run(o, test_alpha, d);
  observe_active(o, d);
  return d;
}

StasisDecision StasisModel::observe_late(const Observation& o) {
  StasisDecision d;
  held_.clear();
  previous_still_.reset();
  depth_ = 0;
  previous_path_ = o.path;
  previous_t_ = o.t;
  describe_run(o, 0, d);

  active_run_.clear();
  excursions_.clear();
  previous_active_ = o.active_path;
  previous_active_ranks_ = o.active_ranks;
  previous_active_t_ = o.t;
  last_active_ = has_active_rank(o) ? o.active_path : 0;  // no link across the gap
  describe_active_run(o, d);
  return d;
}

void StasisModel::describe_run(const Observation& o, double test_alpha, StasisDecision& d) {
  d.first_bound = first_bound_;
  d.continue_bound = continue_bound_;
  d.pairs = first_trials_;
  d.early_applies =
      first_trials_ >= config_.early_min_pairs &&
      static_cast<double>(first_hits_) <= config_.early_max_still_share * static_cast<double>(first_trials_);
  // A place never seen is bounded by the pooled s+ at every depth (place_bound).
  if (const auto steps = steps_to_fire(first_bound_, continue_bound_, test_alpha)) d.new_place_streak = 1 + *steps;
  d.streak = static_cast<int>(held_.size());
  d.streak_onset = held_onset_;
  if (d.streak > 0) {
    // The run's still observations after the first: the d-th is bounded by s_v,min(d, run_memory-1).
    const int deepest = depth_class(std::numeric_limits<int>::max());
    d.steps = std::max(0, deepest - 1);
    for (int g = 1; g <= d.steps; ++g) d.step_bounds[g - 1] = place_bound(o.path, g);
    d.continue_bound = place_bound(o.path, deepest);
    const auto bound_of = [&](int length) {
      double bound = first_bound_;
      const int shallow = std::min(length - 1, d.steps);
      for (int g = 1; g <= shallow; ++g) bound *= d.step_bounds[g - 1];
      return bound * std::pow(d.continue_bound, length - 1 - shallow);
    };
    d.streak_bound = bound_of(d.streak);
    d.fired = config_.enabled && d.streak_bound <= test_alpha;
    for (int length = 1; length <= d.steps + 1 && d.required_streak == 0; ++length) {
      if (bound_of(length) <= test_alpha) d.required_streak = length;
    }
    if (d.required_streak == 0) {
      // A bound just below 1 asks for billions of observations: none, as far as anyone waits.
      if (const auto steps = steps_to_fire(bound_of(d.steps + 1), d.continue_bound, test_alpha)) {
        d.required_streak = d.steps + 1 + *steps;
      }
    }
  }
}

void StasisModel::resume_after_slowdown(double progress_at) {
  auto kept = std::find_if(held_.begin(), held_.end(), [&](const Pair& p) { return p.t > progress_at; });
  // The job moved at progress_at: what was still after it is a run that starts there.
  if (kept != held_.begin()) held_.erase(held_.begin(), kept);
  if (!held_.empty()) held_onset_ = std::max(held_onset_, progress_at);

  // A run that verification saw end was healthy stillness: the model-free rule now knows it.
  if (!active_run_.empty() && progress_at > active_onset_ && progress_at < std::numeric_limits<double>::infinity()) {
    longest_active_run_ = std::max(longest_active_run_, std::min(progress_at, active_run_.back()) - active_onset_);
  }
  std::erase_if(active_run_, [&](double t) { return t <= progress_at; });
  if (!active_run_.empty()) active_onset_ = std::max(active_onset_, progress_at);
}

void StasisModel::add_link(bool still) {
  links_.push_back(still);
  still_links_ += still ? 1 : 0;
  if (config_.window != 0 && links_.size() > config_.window) {
    still_links_ -= links_.front() ? 1 : 0;
    links_.pop_front();
  }
}

namespace {

// Some ranks busy-wait beside the active ones: they may be the ones working (hpcc's RandomAccess
// applies its updates inside its MPI_Testany loop), which stacks cannot see. With the progress
// library's counts for every poller, only a rank that could not be placed is such a rank; one in
// MPI_Finalize is not (Observation::finished): it has done its part.
bool beside_waiters(const Observation& o) {
  return o.counted ? o.n > o.active_ranks + o.finished : o.polling || o.n_out > o.active_out;
}

}  // namespace

void StasisModel::step_active(const Observation& o) {
  const bool active = has_active_rank(o);
  const bool still = active && o.active_path == previous_active_ && few_active_outside(o);
  if (still) {
    if (active_run_.empty()) {
      active_onset_ = previous_active_t_;
      active_run_ranks_ = o.active_ranks;
      active_run_beside_waiters_ = false;
      active_run_all_in_mpi_ = true;
      active_run_beside_finished_ = true;
      active_run_counted_ = previous_active_counted_;
      active_run_readable_ = o.n;
    }
    active_run_readable_ = std::min(active_run_readable_, o.n);
    // For the whole run: a waiting rank that could not be read once still waits.
    active_run_beside_waiters_ |= beside_waiters(o);
    active_run_all_in_mpi_ &= o.active_out == 0;
    active_run_beside_finished_ &= o.finished > 0;
    active_run_counted_ &= o.counted;
    active_run_.push_back(o.t);
  } else {
    // The run ended by itself: healthy stillness, learned by the guard and the longest-run term.
    // Unless fewer of its ranks could be read at its end (ranks ending: a job killed from outside),
    // which ends it all the same (the safe side) but shows no rank leaving: a job that never moved
    // must not become judgeable in its last moments (a job hung at its first MPI call and then
    // killed was "watched" for its last 0.14 s, 2026-12-05).
    const bool seen_leaving = active_run_.empty() || (o.active_path != 0 && o.n >= active_run_readable_);
    if (!active_run_.empty()) longest_active_run_ = std::max(longest_active_run_, o.t - active_onset_);
    for (std::size_t i = 0; i < active_run_.size(); ++i) add_link(true);
    known_observations_ += seen_leaving ? active_run_.size() : 0;
    active_run_.clear();
    known_observations_ += o.active_path != 0 && seen_leaving ? 1 : 0;
    // A link joins two observations with active ranks, however many others lie between: in a code
    // that mostly polls, few observations have an active rank, and a change across a gap is movement
    // (not one to fewer readable ranks: a moving link would make the job look mostly moving).
    if (active && last_active_ != 0 && seen_leaving) add_link(false);
    // The ranks at the previous place left it for real: for somewhere else with no more active ranks
    // than there were, or into a wait. (One more rank stepping in, or nothing readable, says
    // nothing about them.) A full set forgets nothing: the safe side is "familiar".
    const bool left = has_active_rank(previous_active_) && o.active_path != 0 &&
                      (!active || o.active_ranks <= previous_active_ranks_);
    if (left && left_places_.size() < kMaxActivePlaces) left_places_.insert(previous_active_);
  }
  if (active) last_active_ = o.active_path;
  previous_active_counted_ = o.counted;
  previous_active_ranks_ = o.active_ranks;
  previous_active_ = o.active_path;
  previous_active_t_ = o.t;
}

void StasisModel::observe_active(const Observation& o, StasisDecision& d) {
  // The model-free rule watches the active ranks (set_signature.h): in a code that busy-waits, the
  // waiting ranks hop between the polling calls of their loops, hung or not, and say nothing. They
  // also step out of their loops now and then (hpcc's RandomAccess applies updates between polls,
  // ps_poller's ranks work between polls, now and then in two or three samples in a row) while a
  // hung rank stays where it is: a few observations in which an extra rank was active, or in which
  // too little could be read, do not end a run that the next observation continues. The run's own
  // ranks moving (the same number of active ranks elsewhere), everyone waiting, or more than
  // kMostExcursions such observations in a row always end it.
  const bool resumed = has_active_rank(o) && o.active_path == previous_active_ && few_active_outside(o);
  const bool excursion = !active_run_.empty() && !resumed && o.active_path != previous_active_ &&
                         o.active_path != kEveryoneWaiting &&
                         (o.active_path == 0 || (o.active_ranks > 0 && o.active_ranks > active_run_ranks_));
  if (excursion && excursions_.size() < kMostExcursions) {
    excursions_.push_back(o);  // judged by the next observation that is none
  } else {
    if (!resumed) {
      for (const Observation& earlier : excursions_) step_active(earlier);
    }
    excursions_.clear();
    step_active(o);
  }
  describe_active_run(o, d);
}

void StasisModel::describe_active_run(const Observation& o, StasisDecision& d) {
  // A job that never showed its ranks moving may be a loop around one MPI call site, which looks
  // still all the time. With every rank's count of completed MPI calls (the progress library) it
  // cannot look still: each call it completes moves its place. So counted observations need no
  // such past, and a job deadlocked at its first MPI call is judged like any other.
  const bool shown_moving = known_observations_ >= config_.early_min_pairs;
  d.early_streak = static_cast<int>(active_run_.size());
  // Before that, a run with a rank outside MPI is judged all the same, at four times the length: a
  // rank standing at one place outside MPI while the others wait is no loop around one MPI call
  // (a rank spinning from its first MPI call, beside the others blocked or polling for it, was
  // never watched). Only a healthy rank that computes for that long at one place from the job's
  // start, no I/O, while the others wait, looks the same (Known limits). So is a run beside ranks
  // in MPI_Finalize in every observation: they have left every loop, and ranks blocked in MPI
  // beside them wait for a rank that finished (the classic first test: a receive nobody sends,
  // the others gone on to MPI_Finalize) or for ranks of a loop that hold every remaining
  // sampled rank still at one call site each, with its partners gone.
  const bool before_movement = !shown_moving && !active_run_counted_;
  d.early_before_movement =
      d.early_streak > 0 && before_movement && (!active_run_all_in_mpi_ || active_run_beside_finished_);
  d.early_applies = shown_moving || o.counted || d.early_before_movement;
  if (d.early_streak > 0) {
    d.early_onset = active_onset_;
    // A job whose active ranks mostly stood still at their usual places has long runs as a habit:
    // a run at such a place must be longer. A place its ranks never left for real is no habit: a
    // deadlock's receive or a spin, whose run other ranks' steps may have cut into pieces, which
    // would otherwise count as the job's own stillness.
    const bool mostly_moving =
        static_cast<double>(still_links_) <= config_.early_max_still_share * static_cast<double>(links_.size());
    const bool familiar = left_places_.size() >= kMaxActivePlaces || left_places_.contains(previous_active_);
    const double habit = mostly_moving || !familiar ? 1 : config_.early_habit_factor;
    // Beside busy-waiting ranks, which may be working, a standstill must last longer.
    const double minimum =
        config_.early_min_seconds * (active_run_beside_waiters_ ? config_.early_waiting_factor : 1) * habit;
    d.early_needed =
        std::max({minimum, config_.early_age_fraction * d.early_onset, config_.early_run_factor * longest_active_run_});
    // And much longer when every active rank is blocked in MPI beside them: those ranks wait for the
    // busy-waiting ones, which may work inside their loops (a healthy hpcc on an overloaded node
    // kept two or three ranks in MPI_Waitany for 5 s, and for 22 s, while the others worked on
    // inside their MPI_Testany loops). At a place the job never left (a deadlock's receive) only a
    // standstill four times the usual one is a hang; at one it has left, none is: only the models,
    // or MPI's own progress, can judge that.
    if (active_run_beside_waiters_ && active_run_all_in_mpi_) {
      d.early_needed =
          familiar ? std::numeric_limits<double>::infinity() : config_.early_blocked_factor * d.early_needed;
    }
    if (before_movement) d.early_needed *= config_.early_unshown_factor;
    // Not on an observation still to be judged (an excursion): the next one says what it was.
    d.early_fired = config_.enabled && (!before_movement || d.early_before_movement) &&
                    d.early_streak >= config_.early_min_observations && o.t - d.early_onset >= d.early_needed &&
                    excursions_.empty();
  }
}

}  // namespace parastack::stats
