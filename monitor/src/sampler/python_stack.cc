#include "sampler/python_stack.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

#include "parastack/stats/random.h"

namespace parastack::sampler {
namespace {

bool read_word(const ReadMemory& read, std::uint64_t address, std::uint64_t& word) {
  return address != 0 && read(address, &word, sizeof word);
}

// A compact ASCII str (every identifier and file name the compiler makes): its characters follow
// the object. Anything else (a non-ASCII file name) is not read.
std::optional<std::string> read_ascii(const ReadMemory& read, const CPythonLayout& layout, std::uint64_t object) {
  std::uint64_t length = 0;
  std::uint32_t state = 0;
  if (!read_word(read, object + layout.ascii_length, length) ||
      !read(object + layout.ascii_state, &state, sizeof state))
    return std::nullopt;
  constexpr std::uint32_t kCompact = 1u << 5, kAscii = 1u << 6;
  if ((state & (kCompact | kAscii)) != (kCompact | kAscii) || length > 4096) return std::nullopt;
  std::string text(length, '\0');
  if (length > 0 && !read(object + layout.ascii_data, text.data(), length)) return std::nullopt;
  return text;
}

}  // namespace

std::optional<CPythonLayout> cpython_layout(std::uint32_t version) {
  // x86-64: offsetof in each version's Include/internal/pycore_{runtime,interp,frame}.h and
  // cpython/code.h, compiled against Debian's 3.11.2 headers and pyenv's 3.11.7, 3.12.1 and 3.13.0
  // (the two 3.11s gave the same numbers). CPython keeps these structures within a minor version,
  // as out-of-process profilers that carry one table per minor version rely on. Real interpreters
  // read through them name their frames right: SampledPath.ASpinInEachCPythonNamedKeepsOnePath
  // (Debian's 3.11 on CI; docs/sampler.md has the command that ran it on 3.12 and 3.13).
  switch (version >> 16) {
    case 0x030b:
      return CPythonLayout{.runtime_interpreters_head = 40,
                           .interpreter_threads_head = 16,
                           .thread_next = 8,
                           .thread_native_id = 160,
                           .thread_cframe = 56,
                           .current_frame = 8,
                           .frame_code = 32,
                           .frame_previous = 48,
                           .frame_instruction = 56,
                           .instruction_is_next = false,
                           .frame_run_mark = 68,
                           .shim_frames = false,
                           .code_first_line = 72,
                           .code_file_name = 112,
                           .code_qualified_name = 128,
                           .code_instructions = 184,
                           .code_line_table = 136,
                           .bytes_size = 16,
                           .bytes_data = 32,
                           .ascii_length = 16,
                           .ascii_state = 32,
                           .ascii_data = 48};
    case 0x030c:
      return CPythonLayout{.runtime_interpreters_head = 40,
                           .interpreter_threads_head = 72,
                           .thread_next = 8,
                           .thread_native_id = 144,
                           .thread_cframe = 56,
                           .current_frame = 0,
                           .frame_code = 0,
                           .frame_previous = 8,
                           .frame_instruction = 56,
                           .instruction_is_next = false,
                           .frame_run_mark = 70,
                           .shim_frames = true,
                           .code_first_line = 68,
                           .code_file_name = 112,
                           .code_qualified_name = 128,
                           .code_instructions = 192,
                           .code_line_table = 136,
                           .bytes_size = 16,
                           .bytes_data = 32,
                           .ascii_length = 16,
                           .ascii_state = 32,
                           .ascii_data = 40};
    case 0x030d:
      return CPythonLayout{.runtime_interpreters_head = 632,
                           .interpreter_threads_head = 7344,
                           .thread_next = 8,
                           .thread_native_id = 160,
                           .thread_cframe = std::nullopt,
                           .current_frame = 72,
                           .frame_code = 0,
                           .frame_previous = 8,
                           .frame_instruction = 56,
                           .instruction_is_next = true,
                           .frame_run_mark = 70,
                           .shim_frames = true,
                           .code_first_line = 68,
                           .code_file_name = 112,
                           .code_qualified_name = 128,
                           .code_instructions = 200,
                           .code_line_table = 136,
                           .bytes_size = 16,
                           .bytes_data = 32,
                           .ascii_length = 16,
                           .ascii_state = 32,
                           .ascii_data = 40};
    default:
      return std::nullopt;
  }
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> debug_offsets_313(std::uint32_t version,
                                                                       const CPythonLayout& layout) {
  // offsetof in 3.13's Include/internal/pycore_runtime.h: where each field of _Py_DebugOffsets is.
  return {{8, version},
          {16, 0},  // free_threaded: other object headers
          {40, layout.runtime_interpreters_head},
          {72, layout.interpreter_threads_head},
          {168, layout.thread_next},
          {184, layout.current_frame},
          {200, layout.thread_native_id},
          {232, layout.frame_previous},
          {240, layout.frame_code},
          {248, layout.frame_instruction},
          {264, layout.frame_run_mark},
          {280, layout.code_file_name},
          {296, layout.code_qualified_name},
          {304, layout.code_line_table},
          {312, layout.code_first_line},
          {344, layout.code_instructions},
          {520, layout.bytes_size},
          {528, layout.bytes_data},
          {544, layout.ascii_state},
          {552, layout.ascii_length},
          {560, layout.ascii_data}};
}

bool interpreter_agrees(const ReadMemory& read, std::uint64_t runtime, std::uint32_t version,
                        const CPythonLayout& layout) {
  if ((version >> 16) < 0x030d) return true;
  if ((version >> 16) > 0x030d) return false;  // its _Py_DebugOffsets is laid out otherwise
  char cookie[8];
  if (!read(runtime, cookie, sizeof cookie) || std::memcmp(cookie, "xdebugpy", sizeof cookie) != 0) return false;
  for (const auto& [at, value] : debug_offsets_313(version, layout)) {
    std::uint64_t word = 0;
    if (!read_word(read, runtime + at, word) || word != value) return false;
  }
  return true;
}

std::vector<PythonFrame> read_python_stack(const ReadMemory& read, const CPythonLayout& layout, std::uint64_t runtime,
                                           int tid) {
  std::uint64_t interpreter = 0, thread = 0;
  if (!read_word(read, runtime + layout.runtime_interpreters_head, interpreter) ||
      !read_word(read, interpreter + layout.interpreter_threads_head, thread)) {
    return {};
  }
  // The thread's state, among the main interpreter's (mpi4py runs in it). A bounded walk: the list
  // can change under us.
  for (int i = 0; thread != 0; ++i) {
    std::uint64_t native_id = 0;
    if (i >= 4096 || !read_word(read, thread + layout.thread_native_id, native_id)) return {};
    if (native_id == static_cast<std::uint64_t>(tid)) break;
    if (!read_word(read, thread + layout.thread_next, thread)) return {};
  }
  if (thread == 0) return {};
  std::uint64_t holder = thread, frame = 0;
  if (layout.thread_cframe && !read_word(read, thread + *layout.thread_cframe, holder)) return {};
  if (!read_word(read, holder + layout.current_frame, frame)) return {};
  // One read a frame (its fields lie within its first 128 bytes): a sample's cost is syscalls.
  const std::size_t extent = std::max(
      {layout.frame_code + 8, layout.frame_previous + 8, layout.frame_instruction + 8, layout.frame_run_mark + 1});
  std::array<std::uint8_t, 128> bytes{};
  if (extent > bytes.size()) return {};
  const auto field = [&](std::uint64_t offset) {
    std::uint64_t word = 0;
    std::memcpy(&word, bytes.data() + offset, sizeof word);
    return word;
  };
  constexpr std::uint8_t kOwnedByCStack = 3;  // FRAME_OWNED_BY_CSTACK, 3.12 and 3.13
  std::vector<PythonFrame> frames;
  // Bounded in frames read, shims included: a torn chain may loop through anything.
  for (std::size_t steps = 0; frame != 0; ++steps) {
    if (steps >= 2 * kMaxPythonFrames || frames.size() >= kMaxPythonFrames || !read(frame, bytes.data(), extent)) {
      return {};
    }
    const std::uint8_t mark = bytes[layout.frame_run_mark];
    frame = field(layout.frame_previous);
    if (layout.shim_frames && mark == kOwnedByCStack) {
      if (!frames.empty()) frames.back().entry = true;  // the run's outermost Python frame
      continue;
    }
    PythonFrame f{.code = field(layout.frame_code),
                  .instruction = field(layout.frame_instruction),
                  .entry = !layout.shim_frames && mark != 0};
    // A frame being set up has run no instruction yet (instruction 0 then): not a place until it
    // has. Before 3.13 it points before its code's first instruction, in 3.13 at it.
    const std::uint64_t first = f.code + layout.code_instructions;
    if (f.instruction < first || (layout.instruction_is_next && f.instruction == first)) f.instruction = 0;
    frames.push_back(f);
  }
  return frames;
}

std::optional<int> python_line(std::span<const std::uint8_t> table, int first_line, std::uint64_t unit) {
  std::size_t at = 0;
  const auto varint = [&]() -> std::optional<std::uint32_t> {
    std::uint32_t value = 0;
    for (int shift = 0; at < table.size() && shift < 32; shift += 6) {
      const std::uint8_t byte = table[at++];
      value |= static_cast<std::uint32_t>(byte & 63) << shift;
      if (!(byte & 64)) return value;
    }
    return std::nullopt;
  };
  const auto signed_varint = [&]() -> std::optional<int> {
    const auto value = varint();
    if (!value) return std::nullopt;
    return (*value & 1) ? -static_cast<int>(*value >> 1) : static_cast<int>(*value >> 1);
  };
  // 64 bits: the deltas of a torn or foreign table must not overflow (a line out of int's range is
  // no line).
  std::int64_t line = first_line;
  std::uint64_t start = 0;
  while (at < table.size()) {
    const std::uint8_t head = table[at++];
    if (!(head & 128)) return std::nullopt;  // not an entry's first byte: not a table we know
    const int code = (head >> 3) & 15;
    const std::uint64_t length = (head & 7) + 1;
    bool has_line = true;
    if (code == 15) {
      has_line = false;       // no location
    } else if (code == 14) {  // long form: line delta, end line delta, column, end column
      const auto delta = signed_varint();
      if (!delta || !varint() || !varint() || !varint()) return std::nullopt;
      line += *delta;
    } else if (code == 13) {  // no column: line delta
      const auto delta = signed_varint();
      if (!delta) return std::nullopt;
      line += *delta;
    } else if (code >= 10) {  // one-line form: line delta code - 10, two column bytes
      line += code - 10;
      at += 2;
    } else {  // short form: same line, one column byte
      at += 1;
    }
    if (line < 0 || line > std::numeric_limits<int>::max()) return std::nullopt;
    if (unit < start + length) return has_line ? std::optional(static_cast<int>(line)) : std::nullopt;
    start += length;
  }
  return std::nullopt;
}

std::string describe_python_frame(const ReadMemory& read, const CPythonLayout& layout, const PythonFrame& frame) {
  std::uint64_t name_object = 0, file_object = 0, table_object = 0;
  std::int32_t first_line = 0;
  const std::uint64_t code = frame.code;
  if (!read_word(read, code + layout.code_qualified_name, name_object) ||
      !read_word(read, code + layout.code_file_name, file_object) ||
      !read(code + layout.code_first_line, &first_line, sizeof first_line)) {
    return {};
  }
  const auto name = read_ascii(read, layout, name_object);
  if (!name) return {};
  const auto file = read_ascii(read, layout, file_object);
  int line = first_line;
  std::uint64_t table_size = 0;
  if (frame.instruction != 0 && read_word(read, code + layout.code_line_table, table_object) &&
      read_word(read, table_object + layout.bytes_size, table_size) && table_size > 0 && table_size <= (1u << 20)) {
    std::vector<std::uint8_t> table(table_size);
    if (read(table_object + layout.bytes_data, table.data(), table.size())) {
      const std::uint64_t unit = (frame.instruction - code - layout.code_instructions) / 2;
      line = python_line(table, first_line, unit).value_or(first_line);
    }
  }
  return *name + " (" + (file ? *file : std::string("?")) + ":" + std::to_string(line) + ")";
}

namespace {

// The place of the stack standing in frames[innermost]: that function by code object, its callers
// by call.
std::uint64_t place_from(const std::vector<PythonFrame>& frames, std::size_t innermost) {
  std::uint64_t hash = stats::mix64(frames[innermost].code);
  for (std::size_t i = innermost + 1; i < frames.size(); ++i) {
    hash = stats::mix64(hash ^ frames[i].code);
    hash = stats::mix64(hash ^ frames[i].instruction);
  }
  return hash == 0 ? 1 : hash;
}

}  // namespace

std::uint64_t python_place(const std::vector<PythonFrame>& frames) { return python_places(frames).place; }

PythonPlace python_places(const std::vector<PythonFrame>& frames) {
  std::size_t innermost = 0;
  while (innermost < frames.size() && frames[innermost].instruction == 0) ++innermost;  // being set up
  if (innermost == frames.size()) return {};
  PythonPlace place{place_from(frames, innermost)};
  for (std::size_t j = 0; j < place.enclosing.size() && innermost + 1 + j < frames.size(); ++j) {
    place.enclosing[j] = place_from(frames, innermost + 1 + j);
  }
  return place;
}

}  // namespace parastack::sampler
