#include "parastack/stats/empirical_distribution.h"

#include <algorithm>

namespace parastack::stats {

void EmpiricalDistribution::add(double sample) {
  order_.push_back(sample);
  insert_value(sample);
  if (capacity_ != 0 && order_.size() > capacity_) {
    erase_value(order_.front());
    order_.pop_front();
  }
}

void EmpiricalDistribution::thin_by_half() {
  std::deque<double> kept;
  for (std::size_t i = 1; i < order_.size(); i += 2) kept.push_back(order_[i]);
  clear();
  for (double value : kept) add(value);
}

void EmpiricalDistribution::clear() {
  order_.clear();
  counts_.clear();
  cumulative_valid_ = false;
}

double EmpiricalDistribution::cdf(double x) const {
  if (order_.empty()) return 0;
  std::size_t at_or_below = 0;
  for (const auto& [value, count] : counts_) {
    if (value > x) break;
    at_or_below += count;
  }
  return static_cast<double>(at_or_below) / static_cast<double>(order_.size());
}

const std::vector<std::pair<double, std::size_t>>& EmpiricalDistribution::cumulative() const {
  if (!cumulative_valid_) {
    cumulative_.clear();
    std::size_t running = 0;
    for (const auto& [value, count] : counts_) cumulative_.emplace_back(value, running += count);
    cumulative_valid_ = true;
  }
  return cumulative_;
}

void EmpiricalDistribution::insert_value(double value) {
  cumulative_valid_ = false;
  auto it = std::lower_bound(counts_.begin(), counts_.end(), value,
                             [](const auto& entry, double v) { return entry.first < v; });
  if (it != counts_.end() && it->first == value) {
    ++it->second;
  } else {
    counts_.insert(it, {value, 1});
  }
}

void EmpiricalDistribution::erase_value(double value) {
  cumulative_valid_ = false;
  auto it = std::lower_bound(counts_.begin(), counts_.end(), value,
                             [](const auto& entry, double v) { return entry.first < v; });
  if (it == counts_.end() || it->first != value) return;
  if (--it->second == 0) counts_.erase(it);
}

}  // namespace parastack::stats
