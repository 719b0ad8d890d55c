// The leader's view of one MPI program through the monitors: a stats::JobProbe whose rank table
// spans every node. A snapshot of C ranks asks only the monitors that hold them; the other
// monitors sleep. Every-rank requests (identification, stacks) go to all monitors at once.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

#include "network/monitors.h"
#include "parastack/stats/watchdog.h"

namespace parastack::network {

class ClusterProbe final : public stats::JobProbe {
 public:
  // table: the program's ranks (one TableEntry each, any order); they are indexed by rank order.
  // keep_watching is polled while waiting (signals, the launcher); false ends the watch.
  ClusterProbe(Monitors& monitors, std::vector<TableEntry> table, std::function<bool()> keep_watching);

  double now() override;
  bool wait_until(double t) override;
  std::vector<stats::RankSnapshot> snapshot(const std::vector<int>& ranks) override;
  std::vector<stats::RankState> all_states(int rank_count) override;
  std::vector<std::optional<stats::WorkCounters>> work_counters() override;
  std::vector<stats::HeldRank> held_ranks(double within_seconds) override;

  GatheredStacks gather_stacks();
  void signal(int signal);  // to every rank of the program, through its monitor
  bool ranks_alive();       // false once every monitor with ranks has said they ended

  const std::vector<TableEntry>& table() const { return table_; }
  int rank_of(int index) const { return table_[static_cast<std::size_t>(index)].rank.rank; }
  double unix_time(double t) const { return start_unix_ + t; }
  std::uint64_t samples_taken();  // every monitor's sample count (asks them)

 private:
  std::vector<int> holders() const;           // the monitors that hold ranks of the program
  std::vector<std::vector<int>> by_monitor_;  // per monitor, its ranks' indices into table_
  Monitors& monitors_;
  std::vector<TableEntry> table_;
  std::vector<int> local_index_;  // table index -> index in its monitor's list
  std::function<bool()> keep_watching_;
  std::vector<bool> finished_;
  int unfinished_ = 0;
  std::chrono::steady_clock::time_point start_;
  double start_unix_;
};

}  // namespace parastack::network
