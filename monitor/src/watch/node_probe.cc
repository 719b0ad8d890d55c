#include "watch/node_probe.h"

#include <signal.h>

#include <algorithm>
#include <thread>

#include "os/proc.h"
#include "watch/stack_views.h"

namespace parastack::watch {
namespace {

using Clock = std::chrono::steady_clock;

// How often a sleeping probe looks at the job: often enough that the monitor exits promptly with
// the job, rarely enough to cost nothing (one waitpid and one clock read per slice).
constexpr auto kWaitSlice = std::chrono::milliseconds(50);

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

NodeProbe::NodeProbe(std::vector<sampler::DiscoveredRank> ranks, std::function<bool()> job_running,
                     sampler::SampleOptions options)
    : ranks_(std::move(ranks)),
      job_running_(std::move(job_running)),
      options_(options),
      start_(Clock::now()),
      start_unix_(unix_now()),
      next_alive_check_(start_) {}

double NodeProbe::now() { return std::chrono::duration<double>(Clock::now() - start_).count(); }

bool NodeProbe::any_rank_alive() {
  const auto now_point = Clock::now();
  if (now_point < next_alive_check_) return alive_;
  next_alive_check_ = now_point + std::chrono::seconds(1);
  alive_ = std::any_of(ranks_.begin(), ranks_.end(), [](const auto& r) {
    const auto stat = os::read_stat(r.pid);
    return stat && stat->state != 'Z' && stat->state != 'X';
  });
  return alive_;
}

bool NodeProbe::wait_until(double t) {
  while (true) {
    if (!job_running_() || !any_rank_alive()) return false;
    const double left = t - now();
    if (left <= 0) return true;
    std::this_thread::sleep_for(
        std::min<Clock::duration>(kWaitSlice, std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(left))));
  }
}

std::vector<stats::RankSnapshot> NodeProbe::snapshot(const std::vector<int>& ranks) {
  std::vector<stats::RankSnapshot> states;
  states.reserve(ranks.size());
  for (int index : ranks) {
    auto sample = sampler_.sample(ranks_[index].pid, options_);
    ++samples_taken_;
    // Drop the cached image (symbols, unwind state) only of a rank that is gone: a rank held by a
    // debugger for a while would otherwise have its symbols reloaded at every sample.
    if (sample.failure == os::StopFailure::Exited || sample.failure == os::StopFailure::Zombie) {
      sampler_.forget(ranks_[index].pid);
    }
    // A rank that could not be sampled (exited, denied) is no evidence either way: Unknown.
    states.push_back({sample.failure ? stats::RankState::Unknown : sample.state,
                      std::move(sample.mpi_function)});
  }
  return states;
}

std::vector<std::optional<std::uint64_t>> NodeProbe::io_bytes() {
  std::vector<std::optional<std::uint64_t>> bytes;
  bytes.reserve(ranks_.size());
  for (const auto& r : ranks_) {
    const auto io = os::read_io(r.pid);
    bytes.push_back(io ? std::optional(io->read_chars + io->written_chars) : std::nullopt);
  }
  return bytes;
}

diagnosis::PrefixTree NodeProbe::gather_stacks(std::vector<RankRecord>& records) {
  diagnosis::PrefixTree tree;
  records.clear();
  sampler::SampleOptions with_frames = options_;
  with_frames.frames = true;
  for (const auto& r : ranks_) {
    const auto sample = sampler_.sample(r.pid, with_frames);
    ++samples_taken_;
    records.push_back({r.rank, r.pid.value, r.host, sample.describe(), sample.mpi_function});
    tree.add(stack_trace_of(sample), static_cast<diagnosis::Rank>(r.rank));
  }
  return tree;
}

}  // namespace parastack::watch
