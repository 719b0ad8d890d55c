// Is a rank inside MPI? Pure: decided from the return addresses of its stack and the code ranges
// of the MPI library, so it can be unit-tested without processes.
//
// The paper decides by name (a frame whose function starts with MPI_/PMPI_/mpi_/pmpi_). Measured
// on Open MPI 4.1 that rule has two holes: MPI_Finalize (and MPI_Abort, and the error paths of many
// entry points) tail-jump into ompi_mpi_finalize, leaving no MPI_ frame, and an application
// function named mpi_exchange_halo looks IN_MPI. Deciding by address (some frame lies in the code
// of the library that defines MPI_Init) gets both right; see docs/sampler.md.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "parastack/stats/verification.h"

namespace parastack::sampler {

struct CodeRange {
  std::uint64_t start = 0, end = 0;
  bool contains(std::uint64_t address) const { return address >= start && address < end; }
};

struct Classification {
  stats::RankState state = stats::RankState::Unknown;
  std::optional<std::size_t> entry_frame;  // the outermost frame inside MPI: the call the
                                           // application made
};

// frames[0] is the innermost (the stopped instruction); the others are return addresses, looked up
// at address - 1 so a call that ends a function is attributed to its caller. A frame inside MPI
// decides IN_MPI even in an incomplete unwind; otherwise only a complete unwind proves OUT_MPI,
// and an incomplete one is Unknown (sampled again, never counted as OUT_MPI).
Classification classify_by_address(std::span<const std::uint64_t> frames, bool complete,
                                   std::span<const CodeRange> mpi_code);

// The paper's rule, kept for comparison: names[i] is frame i's function name (may be empty).
// MPI_x, PMPI_x, mpi_x, pmpi_x: the names MPI entry points (and their Fortran bindings) have.
bool is_mpi_name(std::string_view name);

stats::RankState classify_by_name(std::span<const std::string_view> names, bool complete);

}  // namespace parastack::sampler
