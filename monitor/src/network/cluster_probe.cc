#include "network/cluster_probe.h"

#include <algorithm>
#include <numeric>
#include <thread>

namespace parastack::network {
namespace {

using Clock = std::chrono::steady_clock;

// How long the leader sleeps between looks at the job and the monitors' notices while it waits for
// the next sample: short enough to leave promptly with the job, long enough to cost nothing.
constexpr auto kWaitSlice = std::chrono::milliseconds(50);

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

}  // namespace

ClusterProbe::ClusterProbe(Monitors& monitors, std::vector<TableEntry> table, std::function<bool()> keep_watching)
    : by_monitor_(static_cast<std::size_t>(monitors.count())),
      monitors_(monitors),
      keep_watching_(std::move(keep_watching)),
      finished_(static_cast<std::size_t>(monitors.count()), false),
      start_(Clock::now()),
      start_unix_(unix_now()) {
  // Each monitor lists its ranks in its own order (the order of its adoption); remember that
  // position, then index the table by rank.
  std::vector<int> position(table.size());
  std::vector<int> next(static_cast<std::size_t>(monitors.count()), 0);
  for (std::size_t i = 0; i < table.size(); ++i) position[i] = next[static_cast<std::size_t>(table[i].monitor)]++;
  std::vector<std::size_t> order(table.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return table[a].rank.rank < table[b].rank.rank; });
  for (std::size_t i : order) {
    table_.push_back(table[i]);
    local_index_.push_back(position[i]);
  }
  for (std::size_t i = 0; i < table_.size(); ++i) {
    by_monitor_[static_cast<std::size_t>(table_[i].monitor)].push_back(static_cast<int>(i));
  }
  for (const auto& ranks : by_monitor_) unfinished_ += ranks.empty() ? 0 : 1;
}

double ClusterProbe::now() { return std::chrono::duration<double>(Clock::now() - start_).count(); }

bool ClusterProbe::ranks_alive() {
  for (int m : monitors_.finished()) {
    if (m >= 0 && m < monitors_.count() && !finished_[static_cast<std::size_t>(m)] &&
        !by_monitor_[static_cast<std::size_t>(m)].empty()) {
      finished_[static_cast<std::size_t>(m)] = true;
      --unfinished_;
    }
  }
  return unfinished_ > 0;
}

bool ClusterProbe::wait_until(double t) {
  while (true) {
    if (!keep_watching_() || !ranks_alive()) return false;
    const double left = t - now();
    if (left <= 0) return true;
    std::this_thread::sleep_for(std::min<Clock::duration>(
        kWaitSlice, std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(left))));
  }
}

std::vector<int> ClusterProbe::holders() const {
  std::vector<int> monitors;
  for (std::size_t m = 0; m < by_monitor_.size(); ++m) {
    if (!by_monitor_[m].empty()) monitors.push_back(static_cast<int>(m));
  }
  return monitors;
}

std::vector<stats::RankSnapshot> ClusterProbe::snapshot(const std::vector<int>& ranks) {
  // One request per monitor that holds some of these ranks, all sent before any reply is awaited.
  std::vector<int> monitors;
  std::vector<std::vector<int>> asked;  // per asked monitor: positions in `ranks`
  std::vector<std::vector<int>> local;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const int m = table_[static_cast<std::size_t>(ranks[i])].monitor;
    auto it = std::find(monitors.begin(), monitors.end(), m);
    std::size_t slot = static_cast<std::size_t>(it - monitors.begin());
    if (it == monitors.end()) {
      monitors.push_back(m);
      asked.emplace_back();
      local.emplace_back();
    }
    asked[slot].push_back(static_cast<int>(i));
    local[slot].push_back(local_index_[static_cast<std::size_t>(ranks[i])]);
  }
  std::vector<std::pair<int, std::string>> requests;
  for (std::size_t slot = 0; slot < monitors.size(); ++slot)
    requests.emplace_back(monitors[slot], snapshot_request(local[slot]));
  const auto replies = monitors_.call(requests);
  std::vector<stats::RankSnapshot> result(ranks.size());
  for (std::size_t slot = 0; slot < monitors.size(); ++slot) {
    auto snapshots = decode_snapshots(replies[slot]);
    for (std::size_t k = 0; k < asked[slot].size() && k < snapshots.size(); ++k) {
      result[static_cast<std::size_t>(asked[slot][k])] = std::move(snapshots[k]);
    }
  }
  return result;
}

std::vector<stats::RankState> ClusterProbe::all_states(int rank_count) {
  std::vector<stats::RankState> states(static_cast<std::size_t>(rank_count), stats::RankState::Unknown);
  const auto monitors = holders();
  const auto replies = monitors_.call(monitors, plain_request(Request::AllStates));
  for (std::size_t k = 0; k < monitors.size(); ++k) {
    const auto local = decode_states(replies[k]);
    const auto& mine = by_monitor_[static_cast<std::size_t>(monitors[k])];
    for (int index : mine) {
      const auto l = static_cast<std::size_t>(local_index_[static_cast<std::size_t>(index)]);
      if (l < local.size() && index < rank_count) states[static_cast<std::size_t>(index)] = local[l];
    }
  }
  return states;
}

std::vector<std::optional<stats::WorkCounters>> ClusterProbe::work_counters() {
  std::vector<std::optional<stats::WorkCounters>> counters(table_.size());
  const auto monitors = holders();
  const auto replies = monitors_.call(monitors, plain_request(Request::WorkCounters));
  bool any = false;
  for (std::size_t k = 0; k < monitors.size(); ++k) {
    const auto local = decode_work_counters(replies[k]);
    any = any || !local.empty();
    for (int index : by_monitor_[static_cast<std::size_t>(monitors[k])]) {
      const auto l = static_cast<std::size_t>(local_index_[static_cast<std::size_t>(index)]);
      if (l < local.size()) counters[static_cast<std::size_t>(index)] = local[l];
      if (auto& c = counters[static_cast<std::size_t>(index)]) c->node = monitors[k];  // one monitor a node
    }
  }
  if (!any) counters.clear();  // no monitor can tell (emulated ranks): work is not evidence
  return counters;
}

std::vector<stats::HeldRank> ClusterProbe::held_ranks(double within_seconds) {
  std::vector<stats::HeldRank> held;
  const auto monitors = holders();
  const auto replies = monitors_.call(monitors, held_ranks_request(within_seconds));
  for (std::size_t k = 0; k < monitors.size(); ++k) {
    const auto& mine = by_monitor_[static_cast<std::size_t>(monitors[k])];
    for (const auto& h : decode_held(replies[k])) {
      // The monitor's local index back to the table's index.
      for (int index : mine) {
        if (local_index_[static_cast<std::size_t>(index)] == h.local)
          held.push_back({index, h.tracer, h.stopped, h.in_kernel});
      }
    }
  }
  return held;
}

GatheredStacks ClusterProbe::gather_stacks() {
  return decode_stacks(monitors_.reduce(plain_request(Request::GatherStacks)));
}

void ClusterProbe::signal(int signal) { monitors_.call(holders(), signal_request(signal)); }

std::uint64_t ClusterProbe::samples_taken() {
  std::uint64_t total = 0;
  std::vector<int> all(static_cast<std::size_t>(monitors_.count()));
  std::iota(all.begin(), all.end(), 0);
  for (const auto& reply : monitors_.call(all, plain_request(Request::Usage))) total += decode_usage(reply).samples;
  return total;
}

}  // namespace parastack::network
