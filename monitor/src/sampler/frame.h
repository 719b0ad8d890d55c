// One named stack frame, as printed by `parastack stack` and embedded in reports.
#pragma once

#include <cstdint>
#include <string>

namespace parastack::sampler {

struct Frame {
  std::uint64_t address = 0;
  std::string function;  // demangled; empty if unknown
  std::string module;    // file name of the mapping
  bool mpi = false;      // the address lies in the MPI library's code
};

}  // namespace parastack::sampler
