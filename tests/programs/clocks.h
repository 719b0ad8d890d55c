/* Time in the test programs: the wall clock, and compute measured in CPU time. */
#pragma once

#include <time.h>

static inline double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Computes for about ms milliseconds of CPU time (on an oversubscribed node wall time would also
 * count the time others run); returns the sum, for the caller to keep. Not inlined: stacks show
 * it by name. */
__attribute__((noinline, unused)) static double relax_grid(double ms) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  const double end = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec + ms / 1000;
  double x = 0;
  for (;;) {
    for (int i = 1; i < 2000; ++i) x += 1.0 / ((double)i * i);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    if ((double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec >= end) break;
  }
  return x;
}
