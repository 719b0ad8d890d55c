// The Python stack reader (sampler/python_stack.h) on any memory: a rank's memory is the rank's to
// shape (a bug that overwrites the interpreter's state, a torn read while it runs), and the monitor
// reads it. The first byte picks CPython 3.11, 3.12 or 3.13 (mod 3), the next four the thread id;
// the rest is the memory at 0x10000, where _PyRuntime is; every other address is unreadable. The
// walk ends, within its bounds, on anything; what it gives is what the memory says.
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "check.h"
#include "sampler/python_stack.h"

namespace {

using namespace parastack::sampler;

constexpr std::uint64_t kBase = 0x10000;
constexpr std::uint32_t kVersions[] = {0x030b02f0, 0x030c01f0, 0x030d00f0};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 5) return 0;
  const std::uint32_t version = kVersions[data[0] % 3];
  int tid = 0;
  std::memcpy(&tid, data + 1, sizeof tid);
  const std::span<const std::uint8_t> memory(data + 5, size - 5);
  std::size_t reads = 0;
  const ReadMemory read = [&](std::uint64_t address, void* buffer, std::size_t length) {
    ++reads;
    if (address < kBase || address - kBase > memory.size() || length > memory.size() - (address - kBase)) return false;
    if (length > 0) std::memcpy(buffer, memory.data() + (address - kBase), length);
    return true;
  };
  const CPythonLayout layout = *cpython_layout(version);

  // 3.13's own offsets: accepted only with the cookie, and only for those it was given.
  reads = 0;
  if (interpreter_agrees(read, kBase, version, layout)) {
    FUZZ_REQUIRE(version < 0x030d0000 || (memory.size() >= 8 && std::memcmp(memory.data(), "xdebugpy", 8) == 0));
  }

  reads = 0;
  const std::vector<PythonFrame> frames = read_python_stack(read, layout, kBase, tid);
  FUZZ_REQUIRE(frames.size() <= kMaxPythonFrames);
  // Bounded work: the thread list (4096) and the frames (shims included) each end.
  FUZZ_REQUIRE(reads <= 2 + 2 * 4096 + 2 + 2 * kMaxPythonFrames);
  bool placed = false;
  for (const PythonFrame& f : frames) {
    // An instruction is 0 (not run yet) or inside its code, past the bytecode's start.
    FUZZ_REQUIRE(f.instruction == 0 || f.instruction >= f.code + layout.code_instructions);
    placed |= f.instruction != 0;
  }
  FUZZ_REQUIRE((python_place(frames) != 0) == placed);
  // The places around a stack exist only where it has a place, the second only beside the first.
  const PythonPlace places = python_places(frames);
  FUZZ_REQUIRE(places.place == python_place(frames));
  FUZZ_REQUIRE(places.enclosing[0] == 0 || placed);
  FUZZ_REQUIRE(places.enclosing[1] == 0 || places.enclosing[0] != 0);

  for (std::size_t i = 0; i < frames.size() && i < 8; ++i) {
    const std::string name = describe_python_frame(read, layout, frames[i]);
    // "qualname (file:line)": both names at most 4096 characters.
    FUZZ_REQUIRE(name.empty() || (name.back() == ')' && name.size() <= 2 * 4096 + 16));
  }

  // The C frames all stay, in order, with the Python frames among them.
  std::vector<int> c_frames;
  for (std::size_t i = 0; i < 6 && i < memory.size(); ++i) c_frames.push_back(memory[i] % 2 == 0 ? -1 : 1);
  const auto merged = interleave_python_frames(
      c_frames, frames, [](int f) { return f < 0; }, [](std::size_t i) { return static_cast<int>(1000 + i); });
  std::vector<int> kept;
  for (int f : merged) {
    if (f < 1000) kept.push_back(f);
  }
  FUZZ_REQUIRE(kept == c_frames);
  FUZZ_REQUIRE(merged.size() <= c_frames.size() + frames.size());

  // The location table: a line is never negative.
  if (memory.size() >= 8) {
    int first_line = 0;
    std::memcpy(&first_line, memory.data(), sizeof first_line);
    for (std::uint64_t unit : {0, 1, 7, 1000}) {
      const auto line = python_line(memory.subspan(4), first_line, unit);
      FUZZ_REQUIRE(!line || *line >= 0);
    }
  }
  return 0;
}
