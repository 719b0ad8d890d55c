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
};

}  // namespace parastack::sampler
