// One observation of the monitored ranks, the unit the model consumes and the sample trace stores.
#pragma once

#include <cstdint>

namespace parastack::stats {

struct Observation {
  double t = 0;   // seconds since monitoring started
  int set = 0;    // which disjoint monitored set was sampled
  int n_out = 0;  // ranks of that set found OUT_MPI
  int n = 0;      // ranks of that set classified (unknown states are not counted)
  // Stasis evidence (docs/statistics.md): a signature of the set's call paths, equal between two
  // observations when no sampled rank moved; 0 when some rank's path was unknown, or a rank was
  // starting or ending MPI. Traces without it replay with 0: no stasis evidence.
  std::uint64_t path = 0;
  bool polling = false;  // some rank was seen in a polling call (MPI_Test, MPI_Iprobe...)
};

// n_out <= max(1, n / 4): few of the set's ranks outside MPI, the paper's picture of a hang.
inline bool few_outside(const Observation& o) { return o.n > 0 && o.n_out <= (o.n / 4 > 1 ? o.n / 4 : 1); }

}  // namespace parastack::stats
