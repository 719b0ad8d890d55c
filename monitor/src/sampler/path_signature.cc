#include "sampler/path_signature.h"

#include <algorithm>
#include <array>

#include "parastack/stats/random.h"
#include "parastack/stats/verification.h"

namespace parastack::sampler {
namespace {

// Order matters (mix64 is not linear): the same addresses in another order are another path.
std::uint64_t combine(std::uint64_t hash, std::uint64_t word) { return stats::mix64(hash ^ word); }

// FNV-1a: deterministic across runs, unlike std::hash.
std::uint64_t hash_name(std::string_view name) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

// The innermost frame of the application function that entered the OpenMP runtime, from the
// application frame `innermost` (path_signature's comment says why). A thread the runtime started
// (a worker: its outermost frames are the runtime's and the C runtime's) has no such function and
// keeps `innermost`.
std::size_t outside_parallel_regions(std::span<const std::uint64_t> frames, std::size_t innermost,
                                     const RuntimeCode& in_openmp, const RuntimeCode& in_runtime) {
  const auto code = [&](std::size_t i) { return i == 0 ? frames[0] : frames[i] - 1; };
  const auto in_a_runtime = [&](std::size_t i) { return in_openmp(code(i)) || (in_runtime && in_runtime(code(i))); };
  for (;;) {
    std::size_t k = innermost;
    if (!in_openmp(code(k))) {
      // An application frame: a body the runtime called, or a place of its own.
      if (k + 1 >= frames.size() || !in_openmp(code(k + 1))) return innermost;
      ++k;
    }
    while (k < frames.size() && in_a_runtime(k)) ++k;
    if (k >= frames.size()) return innermost;
    innermost = k;
  }
}

}  // namespace

bool is_startup_or_shutdown(std::string_view mpi_function) {
  return stats::is_startup_function(mpi_function) || stats::is_shutdown_function(mpi_function);
}

std::uint64_t path_signature(std::span<const std::uint64_t> frames, bool complete, const Classification& classification,
                             std::string_view mpi_function, const FunctionIdentity& function_of,
                             const RuntimeCode& in_runtime, const RuntimeCode& in_mpi_wrapper,
                             const RuntimeCode& in_openmp, const RuntimeCode& in_interpreter,
                             std::uint64_t python_place) {
  return place_signature(frames, complete, classification, mpi_function, function_of, in_runtime, in_mpi_wrapper,
                         in_openmp, in_interpreter, PythonPlace{python_place})
      .path;
}

Place place_signature(std::span<const std::uint64_t> frames, bool complete, const Classification& classification,
                      std::string_view mpi_function, const FunctionIdentity& function_of, const RuntimeCode& in_runtime,
                      const RuntimeCode& in_mpi_wrapper, const RuntimeCode& in_openmp,
                      const RuntimeCode& in_interpreter, const PythonPlace& python_stack) {
  const auto code = [&](std::size_t i) { return i == 0 ? frames[0] : frames[i] - 1; };
  const bool python = python_stack.place != 0 && in_interpreter;
  const auto interpreted = [&](std::size_t i) { return python && in_interpreter(code(i)); };
  std::size_t innermost = 0;  // of the application part
  switch (classification.state) {
    case stats::RankState::Unknown:
      return {};
    case stats::RankState::OutMpi:
      // A partial stack of a computing rank could be the same partial stack of different paths.
      if (!complete) return {};
      while (innermost + 1 < frames.size() && ((in_runtime && in_runtime(code(innermost))) || interpreted(innermost))) {
        ++innermost;
      }
      break;
    case stats::RankState::InMpi:
      if (!classification.entry_frame || is_startup_or_shutdown(mpi_function)) return {};
      innermost = *classification.entry_frame + 1;
      if (in_mpi_wrapper) {
        while (innermost + 1 < frames.size() && in_mpi_wrapper(frames[innermost] - 1)) ++innermost;
      }
      break;
  }
  if (innermost >= frames.size()) return {};
  const std::size_t mpi_call_site = innermost;  // of a blocking call, below
  if (in_openmp) innermost = outside_parallel_regions(frames, innermost, in_openmp, in_runtime);
  // A rank at work in Python alone has no C place outside the interpreter (the walk above ends at
  // its outermost frame): its place is its Python stack's.
  constexpr std::uint64_t kInterpreter = 0x507974686f6e;
  const auto function = interpreted(innermost) ? std::optional(kInterpreter) : function_of(code(innermost));
  if (!function) return {};
  // Standing in `function`, frame k: the function, then the call sites out from it.
  const auto standing_at = [&](std::size_t k, std::uint64_t in_function) {
    std::uint64_t hash = stats::mix64(in_function);
    for (std::size_t i = k + 1; i < frames.size(); ++i) {
      if (!interpreted(i)) hash = combine(hash, frames[i]);
    }
    return hash;
  };
  const auto known = [](std::uint64_t hash) { return hash == 0 ? std::uint64_t{1} : hash; };  // 0 means unknown
  std::uint64_t hash = standing_at(innermost, *function);
  if (python) hash = combine(hash, python_stack.place);
  if (classification.state == stats::RankState::InMpi && !stats::is_polling_function(mpi_function)) {
    // A blocking call is also told apart by its call site: two MPI_Sendrecv of one loop are two
    // places, and a rank going from one to the other has moved. (A polling call is not: the loop
    // around it must have one path whether the rank is seen in MPI or in the loop.)
    hash = combine(combine(hash, hash_name(mpi_function)), frames[mpi_call_site]);
  }
  Place place{known(hash)};
  if (classification.state != stats::RankState::OutMpi) return place;
  if (python) {
    // In Python alone (the walk above found no C frame but the interpreter's and the C runtime's),
    // the C part of the place is the same wherever the Python stack is: the places around are the
    // Python stack's. In an extension's code that the Python code called (numpy's kernel, its own
    // frames innermost and only the interpreter's out from them), the Python function that called
    // it stands one call out, as a C helper's caller does. A Python callback that an extension
    // runs (the interpreter's frames inside the extension's) has none.
    const auto python_or_runtime = [&](std::size_t i) { return interpreted(i) || (in_runtime && in_runtime(code(i))); };
    stats::EnclosingPlaces python_around = python_stack.enclosing;
    if (!python_or_runtime(innermost)) {
      for (std::size_t i = 0; i < innermost; ++i) {
        if (interpreted(i)) return place;
      }
      std::size_t out = innermost;
      while (out < frames.size() && !python_or_runtime(out)) ++out;
      if (out == frames.size()) return place;
      for (std::size_t i = out; i < frames.size(); ++i) {
        if (!python_or_runtime(i)) return place;
      }
      python_around[0] = python_stack.place;  // the enclosing places one call further out
      std::copy(python_stack.enclosing.begin(), python_stack.enclosing.end() - 1, python_around.begin() + 1);
    }
    // Where a sample in the Python code alone stands in C: the outermost frame, as the walk above.
    const std::size_t outermost = frames.size() - 1;
    const auto outer_function = interpreted(outermost) ? std::optional(kInterpreter) : function_of(code(outermost));
    if (!outer_function) return place;
    const std::uint64_t c_part = standing_at(outermost, *outer_function);
    for (std::size_t j = 0; j < place.enclosing.size(); ++j) {
      if (python_around[j] != 0) place.enclosing[j] = known(combine(c_part, python_around[j]));
    }
    return place;
  }
  std::size_t k = innermost;
  for (auto& enclosing : place.enclosing) {
    if (++k >= frames.size()) break;
    if ((in_runtime && in_runtime(code(k))) || (in_openmp && in_openmp(code(k)))) break;
    const auto caller = function_of(code(k));
    if (!caller) break;
    enclosing = known(standing_at(k, *caller));
  }
  return place;
}

}  // namespace parastack::sampler
