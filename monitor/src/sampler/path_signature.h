// Where a rank is, as a 64-bit signature of its call path: the statistics core's stasis evidence
// (stats::RankSnapshot::path). A hung rank does not move between samples (a deadlock sits at one
// MPI call site, a spin stays in one loop function, a sleep stays in nanosleep); a healthy one
// does. Pure, so it can be unit-tested without processes.
//
// Only the application part of the stack counts (below the MPI call when IN_MPI, all of it when
// OUT_MPI): what MPI does inside a call changes from sample to sample while the rank waits. Its
// innermost frame counts by function, not by address, because a spinning loop's pc moves; the
// outer frames count by return address, because call sites do not. The MPI call's name counts
// too, except for a polling call (MPI_Test*, MPI_Iprobe): a rank in `while (!done) MPI_Test(...)`
// then has one signature whether a sample finds it inside MPI_Test or in its own loop.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>

#include "sampler/classify.h"
#include "sampler/python_stack.h"

namespace parastack::sampler {

// The identity of the function containing a code address (a return address already moved back
// into its call instruction), e.g. where its symbol starts; nullopt when unknown.
using FunctionIdentity = std::function<std::optional<std::uint64_t>(std::uint64_t address)>;
// Whether a code address (looked up as for FunctionIdentity) is in the C runtime (libc, libm...).
using RuntimeCode = std::function<bool(std::uint64_t address)>;

// frames[0] is the innermost (the stopped pc), the others return addresses, as for
// classify_by_address; `classification` is theirs, and `mpi_function` names the MPI call (entry
// frame) when IN_MPI. `function_of` is asked about one address only: the innermost application
// frame's. 0 means unknown: Unknown state, an incomplete unwind of an OUT_MPI rank, no
// application frame, an unknown function, or a rank in MPI start-up or shut-down. Never 0 otherwise.
//
// A computing rank's innermost frames in the C runtime are left out when `in_runtime` is given: a
// loop calling fmax or memcpy, or a rank asleep in nanosleep, is at the place in its own code that
// called them, whether a sample finds it in the call or between calls. Likewise a rank in MPI is
// at the application's call, not in a PMPI wrapper's (`in_mpi_wrapper`: a profiler's or a fault
// injector's MPI_Test around the library's): wrapped and unwrapped calls of one loop are one place.
//
// With `in_openmp` (an OpenMP runtime's code), a thread inside the runtime (a barrier, a lock, the
// task scheduler) or in a function the runtime called (a parallel region's or a task's outlined
// body, `f._omp_fn.0`) is at the place of the application function that entered the runtime, as
// the source reads: `#pragma omp parallel for` is a loop of that function. Without it, a rank
// spinning through one region over and over (a solve that never converges) went from the body to
// the region's closing barrier and back, two places, and never looked still; a serial loop in
// that function does. Functions the body calls stay places of their own.
//
// With `python_place` (not 0: the Python stack's place, python_stack.h) and `in_interpreter`
// (CPython's own code), the rank runs Python: the interpreter's frames are not places (which of its
// C functions runs a bytecode says nothing of where the program is), the Python stack is. The C
// frames outside it still count: an extension's kernel (numpy) the Python code called, and the
// MPI call's call site in mpi4py.
std::uint64_t path_signature(std::span<const std::uint64_t> frames, bool complete, const Classification& classification,
                             std::string_view mpi_function, const FunctionIdentity& function_of,
                             const RuntimeCode& in_runtime = {}, const RuntimeCode& in_mpi_wrapper = {},
                             const RuntimeCode& in_openmp = {}, const RuntimeCode& in_interpreter = {},
                             std::uint64_t python_place = 0);

// A rank's place and the places of the functions around it. `enclosing[j]` is the signature a
// sample standing in the function j + 1 calls out from the innermost application frame would have
// (its own code, the same outer call sites): so a sample in a helper has, as enclosing[0], the path
// of a sample in the loop that called it. A spin whose loop calls a helper (or two) on every pass
// is seen in the loop and in its helpers in turn; stats::SetSignatures uses these to see it stand
// still at the loop (docs/statistics.md, "A loop through helpers"). Only for a rank outside MPI
// with a C place: 0 otherwise, and from a caller in the C runtime or an OpenMP runtime on (qsort
// calling a comparison is not a loop of the application's). A rank at work in Python alone has
// its Python stack's (`python`, python_stack.h: a loop calling Python helpers); one found in a C
// extension's kernel that Python called (numpy's) has that Python function one call out; one in a
// Python callback an extension runs has none.
struct Place {
  std::uint64_t path = 0;
  stats::EnclosingPlaces enclosing{};
};
Place place_signature(std::span<const std::uint64_t> frames, bool complete, const Classification& classification,
                      std::string_view mpi_function, const FunctionIdentity& function_of,
                      const RuntimeCode& in_runtime = {}, const RuntimeCode& in_mpi_wrapper = {},
                      const RuntimeCode& in_openmp = {}, const RuntimeCode& in_interpreter = {},
                      const PythonPlace& python = {});

// MPI_Init, MPI_Init_thread and MPI_Finalize in any spelling (PMPI_, Fortran mpi_init_, MPI_INIT),
// and Open MPI's ompi_mpi_init / ompi_mpi_finalize, which MPI_Finalize tail-jumps into (so no
// MPI_Finalize frame is left). A rank sitting still there waits for the others to launch or to
// finish: not a hang.
bool is_startup_or_shutdown(std::string_view mpi_function);

}  // namespace parastack::sampler
