// What the fuzz targets assert: an invariant that does not hold is a crash libFuzzer keeps (with
// the input that broke it), in every build type.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace parastack::fuzz {

[[noreturn]] inline void invariant_broken(const char* what, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: invariant broken: %s\n", file, line, what);
  std::abort();
}

}  // namespace parastack::fuzz

#define FUZZ_REQUIRE(condition) \
  ((condition) ? static_cast<void>(0) : ::parastack::fuzz::invariant_broken(#condition, __FILE__, __LINE__))
