// One frame of a sampled stack, named: its address, function and module. Printed by `parastack
// stack`; turned into a diagnosis::Frame (which has no address) for the prefix tree.
#pragma once

#include <cstdint>
#include <string>

namespace parastack::sampler {

struct SampledFrame {
  std::uint64_t address = 0;
  std::string function;  // demangled; empty if unknown
  std::string module;    // file name of the mapping
  bool mpi = false;      // the address lies in the MPI library's code
  // The address's offset in its function (0: unknown): for a caller's frame, its call site, which
  // orders two waits in one function (diagnosis/stack_order.h).
  std::uint64_t offset = 0;
};

}  // namespace parastack::sampler
