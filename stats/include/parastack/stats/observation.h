// One observation of the monitored ranks, the unit the model consumes and the sample trace stores.
#pragma once

namespace parastack::stats {

struct Observation {
  double t = 0;   // seconds since monitoring started
  int set = 0;    // which disjoint monitored set was sampled
  int n_out = 0;  // ranks of that set found OUT_MPI
  int n = 0;      // ranks of that set classified (unknown states are not counted)
};

}  // namespace parastack::stats
