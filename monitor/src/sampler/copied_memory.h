// Bounds of the memory the sampler copied while a thread was stopped (its stack, the vdso), which
// the unwinder reads instead of the running process. Pure, so the arithmetic is unit-tested.
#pragma once

#include <cstddef>
#include <cstdint>

namespace parastack::sampler {

// Whether `bytes` read at `address` lie wholly inside a copy of [start, start + size). In offsets,
// never `address + bytes`: a garbage address near 2^64 (a corrupt frame) would wrap around and
// pass, and the read would land far outside the copy (a monitor crash seen in CI).
constexpr bool copy_holds(std::uint64_t address, std::size_t bytes, std::uint64_t start, std::size_t size) {
  return address >= start && size >= bytes && address - start <= size - bytes;
}

}  // namespace parastack::sampler
