// Small deterministic generators: a watchdog run or a simulated campaign is reproducible from its
// seed.
#pragma once

#include <cstdint>

namespace parastack::stats {

constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) from the top 53 bits.
constexpr double to_unit(std::uint64_t x) { return static_cast<double>(x >> 11) * 0x1.0p-53; }

class SplitMix {
 public:
  explicit SplitMix(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() { return mix64(state_++ * 0x9e3779b97f4a7c15ULL + 1); }
  double uniform() { return to_unit(next()); }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }

 private:
  std::uint64_t state_;
};

}  // namespace parastack::stats
