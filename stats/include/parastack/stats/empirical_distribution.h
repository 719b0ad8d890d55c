// The model's sample set: the most recent samples of S (fraction of sampled ranks outside MPI),
// with empirical CDF queries over the few distinct values they take.
#pragma once

#include <cstddef>
#include <deque>
#include <utility>
#include <vector>

namespace parastack::stats {

class EmpiricalDistribution {
 public:
  // capacity: at most this many samples are kept; older ones are forgotten (0 = unbounded).
  explicit EmpiricalDistribution(std::size_t capacity = 0) : capacity_(capacity) {}

  void add(double sample);
  // Keep every second sample, as if they had been taken at twice the interval (§3.1).
  void thin_by_half();
  void clear();

  std::size_t size() const { return order_.size(); }
  bool empty() const { return order_.empty(); }

  // F_n(x): fraction of samples <= x.
  double cdf(double x) const;
  // Distinct sample values, ascending, each with how many samples <= it (cumulative count).
  const std::vector<std::pair<double, std::size_t>>& cumulative() const;

 private:
  void insert_value(double value);
  void erase_value(double value);

  std::size_t capacity_;
  std::deque<double> order_;                            // arrival order, for forgetting
  std::vector<std::pair<double, std::size_t>> counts_;  // distinct value -> count, ascending
  mutable std::vector<std::pair<double, std::size_t>> cumulative_;
  mutable bool cumulative_valid_ = false;
};

}  // namespace parastack::stats
