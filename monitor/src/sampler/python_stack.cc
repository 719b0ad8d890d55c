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
  // 3.11.x, x86-64: offsetof in Include/internal/pycore_{runtime,interp,frame}.h and cpython/code.h,
  // the same in 3.11.2 (Debian 12) and 3.11.7 (pyenv). A real interpreter read through them
  // (SampledPath.ARankSpinningInPythonKeepsOnePathAndShowsItsPythonFrames) names its frames right.
  if ((version >> 16) == 0x030b) {
    return CPythonLayout{.runtime_interpreters_head = 40,
                         .interpreter_threads_head = 16,
                         .thread_next = 8,
                         .thread_native_id = 160,
                         .thread_cframe = 56,
                         .cframe_current_frame = 8,
                         .frame_code = 32,
                         .frame_previous = 48,
                         .frame_last_instruction = 56,
                         .frame_is_entry = 68,
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
  }
  return std::nullopt;
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
  std::uint64_t cframe = 0, frame = 0;
  if (thread == 0 || !read_word(read, thread + layout.thread_cframe, cframe)) return {};
  if (!read_word(read, cframe + layout.cframe_current_frame, frame)) return {};
  // One read a frame (its fields lie within its first 128 bytes): a sample's cost is syscalls.
  const std::size_t extent = std::max(
      {layout.frame_code + 8, layout.frame_previous + 8, layout.frame_last_instruction + 8, layout.frame_is_entry + 1});
  std::array<std::uint8_t, 128> bytes{};
  if (extent > bytes.size()) return {};
  const auto field = [&](std::uint64_t offset) {
    std::uint64_t word = 0;
    std::memcpy(&word, bytes.data() + offset, sizeof word);
    return word;
  };
  std::vector<PythonFrame> frames;
  while (frame != 0) {
    if (frames.size() >= kMaxPythonFrames || !read(frame, bytes.data(), extent)) return {};
    PythonFrame f{.code = field(layout.frame_code),
                  .instruction = field(layout.frame_last_instruction),
                  .entry = bytes[layout.frame_is_entry] != 0};
    // A frame being set up has run no instruction yet (instruction 0 then): not a place until it has.
    if (f.instruction < f.code + layout.code_instructions) f.instruction = 0;
    frames.push_back(f);
    frame = field(layout.frame_previous);
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
      read_word(read, table_object + layout.bytes_size, table_size) && table_size <= (1u << 20)) {
    std::vector<std::uint8_t> table(table_size);
    if (read(table_object + layout.bytes_data, table.data(), table.size())) {
      const std::uint64_t unit = (frame.instruction - code - layout.code_instructions) / 2;
      line = python_line(table, first_line, unit).value_or(first_line);
    }
  }
  return *name + " (" + (file ? *file : std::string("?")) + ":" + std::to_string(line) + ")";
}

std::uint64_t python_place(const std::vector<PythonFrame>& frames) {
  std::size_t innermost = 0;
  while (innermost < frames.size() && frames[innermost].instruction == 0) ++innermost;  // being set up
  if (innermost == frames.size()) return 0;
  std::uint64_t hash = stats::mix64(frames[innermost].code);
  for (std::size_t i = innermost + 1; i < frames.size(); ++i) {
    hash = stats::mix64(hash ^ frames[i].code);
    hash = stats::mix64(hash ^ frames[i].instruction);
  }
  return hash == 0 ? 1 : hash;
}

}  // namespace parastack::sampler
