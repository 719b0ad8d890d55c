#include "parastack/sim/workload.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include "parastack/stats/random.h"

namespace parastack::sim {

using stats::mix64;
using stats::SplitMix;
using stats::to_unit;
namespace {

// Call codes; the regular calls of a cycle cycle through kRegularCalls.
constexpr int kTest = -1;
constexpr int kRecv = -2;
constexpr std::array<const char*, 5> kRegularCalls{"MPI_Waitall", "MPI_Allreduce", "MPI_Bcast", "MPI_Barrier",
                                                   "MPI_Alltoall"};

// Call-path signatures (RankSnapshot::path): one for the computation, one per MPI call site, the
// same for a polling loop whether the rank is seen in MPI_Test or in its own loop code. The
// computation has one path however long it lasts, which makes healthy jobs look stiller than real
// ones (real computations move between functions): the pessimistic side for false alarms.
constexpr std::uint64_t kComputePath = 0x1000;
std::uint64_t call_path(int call) { return 0x2000 + static_cast<std::uint64_t>(call + 8); }
constexpr std::uint64_t kCheckpointPath = 0x4000;
constexpr std::uint64_t kSerialEndPath = 0x5000;  // rank 0 summing up alone
constexpr std::uint64_t kWorkLoopPath = 0x6000;   // a polling loop the rank works in (work_polls)
constexpr std::uint64_t kStepOutPath = 0x7000;    // the code it calls between two polls

// A rank in MPI_Finalize has no path (the sampler gives it none).
stats::RankSnapshot finished_snapshot() { return {stats::RankState::InMpi, "MPI_Finalize", 0}; }

std::string call_name(int call) {
  if (call == kTest) return "MPI_Test";
  if (call == kRecv) return "MPI_Recv";
  return kRegularCalls[static_cast<std::size_t>(call) % kRegularCalls.size()];
}

}  // namespace

std::string_view to_string(FaultKind kind) {
  switch (kind) {
    case FaultKind::None:
      return "none";
    case FaultKind::Computation:
      return "computation";
    case FaultKind::Deadlock:
      return "deadlock";
  }
  return "?";
}

SyntheticJob::SyntheticJob(const WorkloadShape& shape, std::uint64_t seed, double duration_seconds, Fault fault)
    : shape_(shape),
      seed_(mix64(seed)),
      duration_(duration_seconds),
      fault_(std::move(fault)),
      serial_end_at_(std::numeric_limits<double>::infinity()) {
  if (fault_.kind == FaultKind::None && shape_.serial_end_max_seconds > 0) {
    const double length = shape_.serial_end_min_seconds +
                          uniform(6, 0, 0) * (shape_.serial_end_max_seconds - shape_.serial_end_min_seconds);
    serial_end_at_ = std::max(0.0, duration_ - length);
  }
  // Poisson arrivals of straggler slowdowns, noise bursts and checkpoints, never overlapping.
  SplitMix rng(seed_ ^ 0x51ed0a11ULL);
  const double per_hour = shape_.slowdowns_per_hour + shape_.noise_per_hour + shape_.checkpoints_per_hour;
  double t = 0;
  const int nodes = std::max(1, (shape_.ranks + shape_.ranks_per_node - 1) / shape_.ranks_per_node);
  while (per_hour > 0) {
    t += -std::log(1 - rng.uniform()) / (per_hour / 3600.0);
    if (t >= duration_) break;
    const double pick = rng.uniform() * per_hour;
    Slowdown s{};
    if (pick < shape_.slowdowns_per_hour) {
      s = {t, t + rng.uniform(shape_.slowdown_min_seconds, shape_.slowdown_max_seconds),
           rng.uniform(shape_.slowdown_min_factor, shape_.slowdown_max_factor), Slowdown::Kind::Straggler,
           static_cast<int>(rng.below(static_cast<std::uint64_t>(nodes)))};
    } else if (pick < shape_.slowdowns_per_hour + shape_.noise_per_hour) {
      s = {t, t + rng.uniform(0.05, 1.0), rng.uniform(1.5, 4.0), Slowdown::Kind::Noise, -1};
    } else {
      s = {t, t + rng.uniform(shape_.checkpoint_min_seconds, shape_.checkpoint_max_seconds),
           std::numeric_limits<double>::infinity(), Slowdown::Kind::Checkpoint, -1};
    }
    slowdowns_.push_back(s);
    t = s.end;
  }
  double lost = 0, writing = 0;
  for (const auto& s : slowdowns_) {
    warp_before_.push_back(lost);
    checkpoint_before_.push_back(writing);
    lost += (s.end - s.start) * (1 - 1 / s.factor);
    if (s.kind == Slowdown::Kind::Checkpoint) writing += s.end - s.start;
  }
  warp_before_.push_back(lost);
  checkpoint_before_.push_back(writing);
}

double SyntheticJob::uniform(std::uint64_t a, std::uint64_t b, std::uint64_t c) const {
  return to_unit(mix64(seed_ ^ mix64(a ^ mix64(b ^ mix64(c)))));
}

SyntheticJob::Moment SyntheticJob::moment(double t) const {
  // First slowdown starting after t; the one before it may contain t.
  auto it = std::upper_bound(slowdowns_.begin(), slowdowns_.end(), t,
                             [](double time, const Slowdown& s) { return time < s.start; });
  const std::size_t index = static_cast<std::size_t>(it - slowdowns_.begin());
  if (index > 0) {
    const Slowdown& s = slowdowns_[index - 1];
    if (t < s.end) return {t - warp_before_[index - 1] - (t - s.start) * (1 - 1 / s.factor), &s};
  }
  return {t - warp_before_[index], nullptr};
}

SyntheticJob::Position SyntheticJob::position(int rank, double app_time, const Slowdown* slowdown) const {
  std::uint64_t block = 0;
  double local = app_time;
  if (shape_.phase_seconds > 0) {
    block = static_cast<std::uint64_t>(app_time / shape_.phase_seconds);
    local = app_time - static_cast<double>(block) * shape_.phase_seconds;
  }
  const Phase& phase = shape_.phases[block % shape_.phases.size()];
  const double cycle_length = phase.cycle_seconds;
  const auto cycle = static_cast<std::uint64_t>(local / cycle_length);
  const double tau = local - static_cast<double>(cycle) * cycle_length;
  const std::uint64_t cycle_id = (block << 40) ^ cycle;
  const auto r = static_cast<std::uint64_t>(rank);

  const double offset = shape_.cycle_offset * cycle_length * uniform(cycle_id, 1, 0);
  const auto relative_of = [&](std::uint64_t q) {
    return 1 + shape_.imbalance * (2 * uniform(q, 2, 0) - 1) + shape_.rank_jitter * (2 * uniform(q, cycle_id, 3) - 1);
  };
  const double relative = relative_of(r);
  double compute = 0, release = 0;
  if (shape_.wait_for_actual_slowest) {
    double slowest = 0;
    for (int q = 0; q < shape_.ranks; ++q) slowest = std::max(slowest, relative_of(static_cast<std::uint64_t>(q)));
    const double span = std::max(0.0, cycle_length - offset - shape_.collective_seconds);
    compute = span * relative / slowest;
    release = offset + span;
  } else {
    compute = std::clamp(phase.compute_fraction * cycle_length * relative, 0.0, cycle_length - offset);
    // The slowest rank can finish no later than this: until then the early ones wait in call 0.
    release = std::min(cycle_length,
                       offset + phase.compute_fraction * cycle_length * (1 + shape_.imbalance + shape_.rank_jitter));
  }
  // Outside the straggler node, ranks finish their work in 1/factor of the stretched timeline.
  if (slowdown && slowdown->kind == Slowdown::Kind::Straggler && rank / shape_.ranks_per_node != slowdown->node) {
    compute /= slowdown->factor;
  }
  const int calls = std::max(1, shape_.mpi_calls_per_cycle);
  // Completed MPI calls: per cycle the polls that found work, then the cycle's calls; at a cycle's
  // start a rank is still in the previous cycle's last call.
  const std::uint64_t work = shape_.work_polls ? static_cast<std::uint64_t>(shape_.work_messages_per_cycle) : 0;
  const std::uint64_t base = 1 + (block << 40) + cycle * (work + static_cast<std::uint64_t>(calls));
  if (tau < offset) return {false, calls - 1, 0, base - 1};
  if (tau < offset + compute) {
    const auto done = static_cast<std::uint64_t>(static_cast<double>(work) * (tau - offset) / compute);
    return {true, 0, offset + compute - tau, base + std::min(done, work)};
  }
  if (tau < release || calls == 1) return {false, 0, 0, base + work};
  const int call = std::min(calls - 1, 1 + static_cast<int>((calls - 1) * (tau - release) / (cycle_length - release)));
  return {false, call, 0, base + work + static_cast<std::uint64_t>(call)};
}

std::uint64_t SyntheticJob::completed_calls(int rank, double t) const {
  const Moment m = moment(t);
  return position(rank, m.app_time, m.slowdown).completed;
}

stats::RankSnapshot SyntheticJob::waiting_snapshot(int rank, int call, double t) const {
  if (shape_.busy_wait && (call == 0 || shape_.poll_every_call)) {
    // A polling loop: mostly inside MPI_Test's progress engine, sometimes in the loop itself.
    if (uniform(static_cast<std::uint64_t>(rank), std::bit_cast<std::uint64_t>(t), 4) < shape_.poll_out_fraction) {
      return {stats::RankState::OutMpi, {}, call_path(call)};
    }
    return {stats::RankState::InMpi, call_name(kTest), call_path(call)};
  }
  return {stats::RankState::InMpi, call_name(call), call_path(call)};
}

stats::RankSnapshot SyntheticJob::polling_work_snapshot(int rank, double t, bool may_step_out) const {
  const auto r = static_cast<std::uint64_t>(rank);
  if (may_step_out && shape_.step_out_fraction > 0 &&
      uniform(r, static_cast<std::uint64_t>(t / shape_.step_out_seconds), 7) < shape_.step_out_fraction) {
    return {stats::RankState::OutMpi, {}, kStepOutPath};
  }
  if (uniform(r, std::bit_cast<std::uint64_t>(t), 4) < shape_.poll_out_fraction) {
    return {stats::RankState::OutMpi, {}, kWorkLoopPath};
  }
  return {stats::RankState::InMpi, call_name(kTest), kWorkLoopPath};
}

int SyntheticJob::deadlocked_rank() const {
  return std::min(shape_.ranks - 1, static_cast<int>(uniform(9, 0, 0) * shape_.ranks));
}

stats::RankSnapshot SyntheticJob::hung_snapshot(int rank, double t) const {
  const auto& faulty = fault_.faulty_ranks;
  if (fault_.kind == FaultKind::Computation && std::find(faulty.begin(), faulty.end(), rank) != faulty.end()) {
    return {stats::RankState::OutMpi, {}, kComputePath};  // spinning or sleeping in its own code
  }
  if (shape_.work_polls) {
    // Nothing arrives to work on: no more steps out of the loop.
    if (fault_.kind == FaultKind::Deadlock && rank == deadlocked_rank()) {
      return {stats::RankState::InMpi, call_name(kRecv), call_path(kRecv)};
    }
    return polling_work_snapshot(rank, t, false);
  }
  // Everybody else finishes the computation under way at the onset, then blocks for good.
  const Moment at_onset = moment(fault_.onset);
  const Position was = position(rank, at_onset.app_time, at_onset.slowdown);
  if (was.computing && t < fault_.onset + was.compute_left) {
    return {stats::RankState::OutMpi, {}, kComputePath};
  }
  if (fault_.kind == FaultKind::Deadlock && shape_.last_message_deadlocks) {
    return rank == 0 ? stats::RankSnapshot{stats::RankState::InMpi, call_name(kRecv), call_path(kRecv)}
                     : finished_snapshot();
  }
  if (shape_.busy_wait) return waiting_snapshot(rank, 0, t);
  if (fault_.kind == FaultKind::Deadlock) {
    const std::array<int, 3> calls{kRecv, 0, 1};
    const int call = calls[static_cast<std::size_t>(uniform(static_cast<std::uint64_t>(rank), 5, 0) * 3)];
    return {stats::RankState::InMpi, call_name(call), call_path(call)};
  }
  const bool neighbour = std::any_of(faulty.begin(), faulty.end(), [rank](int f) { return std::abs(f - rank) == 1; });
  return {stats::RankState::InMpi, call_name(neighbour ? 0 : 1), call_path(neighbour ? 0 : 1)};
}

stats::RankSnapshot SyntheticJob::snapshot(int rank, double t) const {
  stats::RankSnapshot s = uncounted_snapshot(rank, t);
  if (shape_.progress_counts) {
    // In a hang nothing completes; a rank polls in vain while it is in a polling loop.
    const bool hung = fault_.kind != FaultKind::None && t >= fault_.onset;
    s.mpi_completed = completed_calls(rank, hung ? fault_.onset : t);
    s.mpi_polled = s.path == kWorkLoopPath || s.mpi_function == call_name(kTest);
  }
  return s;
}

stats::RankSnapshot SyntheticJob::uncounted_snapshot(int rank, double t) const {
  if (fault_.kind != FaultKind::None && t >= fault_.onset) return hung_snapshot(rank, t);
  if (t >= serial_end_at_)
    return rank == 0 ? stats::RankSnapshot{stats::RankState::OutMpi, {}, kSerialEndPath} : finished_snapshot();
  const Moment m = moment(t);
  if (m.slowdown && m.slowdown->kind == Slowdown::Kind::Checkpoint) {
    return {stats::RankState::InMpi, "MPI_File_write_all", kCheckpointPath};
  }
  const Position p = position(rank, m.app_time, m.slowdown);
  if (p.computing) {
    return shape_.work_polls ? polling_work_snapshot(rank, t, true)
                             : stats::RankSnapshot{stats::RankState::OutMpi, {}, kComputePath};
  }
  return waiting_snapshot(rank, p.call, t);
}

bool SyntheticJob::is_out(int rank, double t) const {
  if (shape_.work_polls) return uncounted_snapshot(rank, t).state == stats::RankState::OutMpi;
  if (fault_.kind != FaultKind::None && t >= fault_.onset) {
    return hung_snapshot(rank, t).state == stats::RankState::OutMpi;
  }
  if (t >= serial_end_at_) return rank == 0;
  const Moment m = moment(t);
  if (m.slowdown && m.slowdown->kind == Slowdown::Kind::Checkpoint) return false;
  const Position p = position(rank, m.app_time, m.slowdown);
  if (p.computing) return true;
  return shape_.busy_wait && (p.call == 0 || shape_.poll_every_call) &&
         uniform(static_cast<std::uint64_t>(rank), std::bit_cast<std::uint64_t>(t), 4) < shape_.poll_out_fraction;
}

std::uint64_t SyntheticJob::io_bytes(int rank, double t) const {
  if (rank % shape_.ranks_per_node != 0) return 0;
  if (fault_.kind != FaultKind::None) t = std::min(t, fault_.onset);  // a hung job writes nothing
  auto it = std::upper_bound(slowdowns_.begin(), slowdowns_.end(), t,
                             [](double time, const Slowdown& s) { return time < s.start; });
  const auto index = static_cast<std::size_t>(it - slowdowns_.begin());
  double seconds = checkpoint_before_[index];
  if (index > 0) {
    const Slowdown& s = slowdowns_[index - 1];
    if (s.kind == Slowdown::Kind::Checkpoint) {
      seconds = checkpoint_before_[index - 1] + std::min(t, s.end) - s.start;
    }
  }
  return static_cast<std::uint64_t>(seconds * shape_.checkpoint_bytes_per_second);
}

std::vector<WorkloadShape> standard_shapes() {
  std::vector<WorkloadShape> shapes{
      {.name = "stencil-1ms",
       .description = "1 ms halo-exchange cycles, 75% compute",
       .phases = {{0.001, 0.75}},
       .rank_jitter = 0.2,
       .mpi_calls_per_cycle = 2},
      {.name = "solver-50ms",
       .description = "50 ms solver iterations, 3 MPI calls, mild imbalance",
       .ranks = 4096,
       .phases = {{0.05, 0.6}},
       .imbalance = 0.05},
      {.name = "slow-10s",
       .description = "10 s time steps, 85% compute",
       .ranks = 256,
       .phases = {{10.0, 0.85}},
       .rank_jitter = 0.05},
      {.name = "phases",
       .description = "three phases (0.2 s/70%, 2 s/30%, 10 ms/90%), 15 min each",
       .ranks = 2048,
       .phases = {{0.2, 0.7}, {2.0, 0.3}, {0.01, 0.9}},
       .phase_seconds = 900},
      {.name = "imbalanced",
       .description = "0.5 s cycles, +-30% per-rank load imbalance",
       .phases = {{0.5, 0.6}},
       .imbalance = 0.3},
      {.name = "noisy",
       .description = "0.2 s cycles, 3 straggler slowdowns/h (3-20x, 10-120 s), 60 noise bursts/h",
       .ranks = 16384,
       .phases = {{0.2, 0.65}},
       .slowdowns_per_hour = 3,
       .noise_per_hour = 60},
      {.name = "busy-wait",
       .description = "0.1 s cycles, waits poll MPI_Test (5% of polls seen in user code)",
       .ranks = 512,
       .phases = {{0.1, 0.5}},
       .busy_wait = true},
      {.name = "comm-heavy-1M",
       .description = "1,000,000 ranks, 1 s cycles, only 25% compute",
       .ranks = 1000000,
       .ranks_per_node = 128,
       .phases = {{1.0, 0.25}}},
      {.name = "early-hang",
       .description = "0.1 s solver iterations, 60% compute; every hang 2-30 s after the start",
       .ranks = 256,
       .phases = {{0.1, 0.6}},
       .onset_min_seconds = 2,
       .onset_max_seconds = 30},
      {.name = "all-polling",
       .description = "every wait an MPI_Test loop, 2% compute: S is always about 0",
       .ranks = 512,
       .phases = {{0.1, 0.02}},
       .busy_wait = true,
       .poll_out_fraction = 0.01,
       .poll_every_call = true},
      // A healthy polling code whose load shifts: for minutes its ranks sit in MPI_Test nearly all
      // the time, a low S the model learned in the busier phase never showed. Only their moves
      // between polling loops, seen in verification, tell it from a hang (verification.h).
      {.name = "polling-phases",
       .description = "every wait an MPI_Test loop; 5-minute phases of 30% and 0.2% compute (S about 0)",
       .ranks = 512,
       .phases = {{0.1, 0.3}, {0.1, 0.002}},
       .phase_seconds = 300,
       .busy_wait = true,
       .poll_out_fraction = 0,
       .poll_every_call = true},
      {.name = "small-4",
       .description = "4 ranks on one node, 0.1 s iterations, 60% compute, +-10% imbalance",
       .ranks = 4,
       .ranks_per_node = 4,
       .phases = {{0.1, 0.6}},
       .imbalance = 0.1},
      {.name = "checkpoint",
       .description = "0.2 s cycles, 2 collective checkpoints/h of 10-120 s in MPI_File_write_all",
       .phases = {{0.2, 0.65}},
       .checkpoints_per_hour = 2},
      // How jobs end (docs/statistics.md, "A job's end"): short jobs, each ending with a serial end
      // in which rank 0 works alone while the others wait in MPI_Finalize (sampled or not: 20 of
      // 64 ranks are), and deadlocks that are the last message never sent.
      {.name = "job-ends",
       .description = "64 ranks, 0.2 s cycles; jobs of 5 min-2 h ending in 5-600 s of rank 0 alone beside "
                      "MPI_Finalize; deadlocks: a last message never sent",
       .ranks = 64,
       .ranks_per_node = 16,
       .phases = {{0.2, 0.6}},
       .serial_end_min_seconds = 5,
       .serial_end_max_seconds = 600,
       .last_message_deadlocks = true,
       .min_job_hours = 5.0 / 60,
       .max_job_hours = 2},
  };
  // hpcc's RandomAccess on a node (docs/statistics.md, section 3 and Known limits, "Work inside
  // polling loops"): ranks work inside their MPI_Testany loops, and those done wait blocked for up
  // to 19 s beside them. Its deadlock is one rank in a receive nobody sends beside 15 pollers.
  const WorkloadShape poll_and_block{
      .name = "poll-and-block",
      .description =
          "16 ranks work inside MPI_Test loops (0.1% in stretches outside them) and block for up "
          "to about 19 s beside the slower ones; 30 s cycles, the slowest working to the end, +-40% "
          "imbalance",
      .ranks = 16,
      .ranks_per_node = 16,
      .phases = {{30.0, 0.6}},
      .cycle_offset = 0.002,
      .imbalance = 0.4,
      .mpi_calls_per_cycle = 2,
      .work_polls = true,
      .step_out_fraction = 0.001,
      .wait_for_actual_slowest = true};
  // The same code with the progress library.
  WorkloadShape counted = poll_and_block;
  counted.name = "poll-and-block-counted";
  counted.description =
      "poll-and-block run with the progress library (--mpi-progress): each sample carries the rank's count of "
      "completed MPI calls, 1000 polls a cycle find work";
  counted.progress_counts = true;
  shapes.push_back(poll_and_block);
  shapes.push_back(std::move(counted));
  return shapes;
}

}  // namespace parastack::sim
