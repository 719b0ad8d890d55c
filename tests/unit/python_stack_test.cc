// The Python stack reader (python_stack.h) on made-up interpreter memory of CPython 3.11, 3.12 and
// 3.13, its line table decoder on a table CPython 3.11 made, and the path signature of Python ranks.
#include "sampler/python_stack.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sampler/classify.h"
#include "sampler/path_signature.h"

namespace parastack::sampler {
namespace {

const CPythonLayout kLayout = *cpython_layout(0x030b02f0);

// Sparse memory: words and bytes at addresses; everything else unreadable.
class FakeMemory {
 public:
  void word(std::uint64_t address, std::uint64_t value) { put(address, &value, sizeof value); }
  void byte(std::uint64_t address, std::uint8_t value) { put(address, &value, 1); }
  void put(std::uint64_t address, const void* data, std::size_t length) {
    const auto* bytes = static_cast<const std::uint8_t*>(data);
    for (std::size_t i = 0; i < length; ++i) memory_[address + i] = bytes[i];
  }
  void forget(std::uint64_t address) { memory_.erase(address); }
  ReadMemory reader() const {
    return [this](std::uint64_t address, void* buffer, std::size_t length) {
      auto* out = static_cast<std::uint8_t*>(buffer);
      for (std::size_t i = 0; i < length; ++i) {
        const auto it = memory_.find(address + i);
        if (it == memory_.end()) return false;
        out[i] = it->second;
      }
      return true;
    };
  }

 private:
  std::map<std::uint64_t, std::uint8_t> memory_;
};

constexpr std::uint64_t kRuntime = 0x10000, kInterpreter = 0x20000, kThreadA = 0x30000, kThreadB = 0x31000,
                        kCFrameB = 0x32000;

// Debian 12's 3.11.2, pyenv's 3.12.1 and 3.13.0: the three ways CPython keeps a thread's frames.
constexpr std::uint32_t kVersions[] = {0x030b02f0, 0x030c01f0, 0x030d00f0};

// An interpreter with two threads (tids 101 and 202); thread 202 runs `frames` (code, instruction
// offset past the code's first instruction or -1 for one being set up, entry), innermost first, in
// `layout`'s structures (from 3.12 a shim frame lies beyond each entry frame).
struct Frame {
  std::uint64_t code;
  long instruction_offset;
  bool entry;
};
FakeMemory interpreter_running(const std::vector<Frame>& frames, const CPythonLayout& layout = kLayout) {
  FakeMemory m;
  m.word(kRuntime + layout.runtime_interpreters_head, kInterpreter);
  m.word(kInterpreter + layout.interpreter_threads_head, kThreadA);
  m.word(kThreadA + layout.thread_native_id, 101);
  m.word(kThreadA + layout.thread_next, kThreadB);
  m.word(kThreadB + layout.thread_native_id, 202);
  m.word(kThreadB + layout.thread_next, 0);
  std::uint64_t holder = kThreadB;
  if (layout.thread_cframe) {
    m.word(kThreadB + *layout.thread_cframe, kCFrameB);
    holder = kCFrameB;
  }
  std::uint64_t frame = 0x40000;
  m.word(holder + layout.current_frame, frames.empty() ? 0 : frame);
  const auto write = [&](std::uint64_t code, std::uint64_t instruction, std::uint8_t mark, bool last) {
    const std::vector<std::uint8_t> zeros(0x100);
    m.put(frame, zeros.data(), zeros.size());
    m.word(frame + layout.frame_code, code);
    m.word(frame + layout.frame_instruction, instruction);
    m.byte(frame + layout.frame_run_mark, mark);
    const std::uint64_t next = last ? 0 : frame + 0x100;
    m.word(frame + layout.frame_previous, next);
    frame = next;
  };
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const std::uint64_t first = frames[i].code + layout.code_instructions;
    const std::uint64_t set_up = layout.instruction_is_next ? first : first - 2;
    const std::uint64_t instruction = frames[i].instruction_offset < 0 ? set_up : first + frames[i].instruction_offset;
    const bool shim = layout.shim_frames && frames[i].entry;
    const bool last = i + 1 == frames.size();
    write(frames[i].code, instruction, !layout.shim_frames && frames[i].entry ? 1 : 0, last && !shim);
    if (shim) write(0x9000, 0x9000 + layout.code_instructions, 3, last);  // FRAME_OWNED_BY_CSTACK
  }
  return m;
}

TEST(PythonStack, CPython311To313AreRead) {
  for (const std::uint32_t version : kVersions) EXPECT_TRUE(cpython_layout(version)) << std::hex << version;
  EXPECT_TRUE(cpython_layout(0x030b07f0));   // 3.11.7
  EXPECT_FALSE(cpython_layout(0x030a0df0));  // 3.10: other structures
  EXPECT_FALSE(cpython_layout(0x030e00f0));  // 3.14: other structures
}

TEST(PythonStack, TheThreadsFramesAreReadInnermostFirst) {
  for (const std::uint32_t version : kVersions) {
    SCOPED_TRACE(std::to_string(version >> 16 & 0xff));
    const CPythonLayout layout = *cpython_layout(version);
    const auto memory = interpreter_running({{0xa000, 10, false}, {0xb000, 40, true}, {0xc000, 6, true}}, layout);
    const auto frames = read_python_stack(memory.reader(), layout, kRuntime, 202);
    ASSERT_EQ(frames.size(), 3u);  // no shim frame among them
    EXPECT_EQ(frames[0].code, 0xa000u);
    EXPECT_EQ(frames[0].instruction, 0xa000u + layout.code_instructions + 10);
    EXPECT_FALSE(frames[0].entry);
    EXPECT_EQ(frames[1].code, 0xb000u);
    EXPECT_TRUE(frames[1].entry);
    EXPECT_EQ(frames[2].code, 0xc000u);
    EXPECT_TRUE(frames[2].entry);
    // Thread 101 runs no Python (no frame); a thread the interpreter does not know has no stack.
    EXPECT_TRUE(read_python_stack(memory.reader(), layout, kRuntime, 101).empty());
    EXPECT_TRUE(read_python_stack(memory.reader(), layout, kRuntime, 303).empty());
  }
}

// 3.13 keeps its own offsets at the start of _PyRuntime: the walk reads it only when they are the
// ones it knows (a free-threaded build's objects are laid out otherwise).
TEST(PythonStack, CPython313IsReadOnlyWhenItsOwnOffsetsAgree) {
  const std::uint32_t version = 0x030d00f0;
  const CPythonLayout layout = *cpython_layout(version);
  // _Py_DebugOffsets, as 3.13.0 lays it out (offsetof in its Include/internal/pycore_runtime.h).
  const auto debug_offsets = [&] {
    FakeMemory m;
    m.put(kRuntime, "xdebugpy", 8);
    const std::pair<std::uint64_t, std::uint64_t> fields[] = {{8, version},
                                                              {16, 0},
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
    for (const auto& [at, value] : fields) m.word(kRuntime + at, value);
    return m;
  };
  EXPECT_TRUE(interpreter_agrees(debug_offsets().reader(), kRuntime, version, layout));
  auto free_threaded = debug_offsets();
  free_threaded.word(kRuntime + 16, 1);
  EXPECT_FALSE(interpreter_agrees(free_threaded.reader(), kRuntime, version, layout));
  auto other_frames = debug_offsets();
  other_frames.word(kRuntime + 248, layout.frame_instruction + 8);
  EXPECT_FALSE(interpreter_agrees(other_frames.reader(), kRuntime, version, layout));
  auto no_cookie = debug_offsets();
  no_cookie.put(kRuntime, "xdebugpz", 8);
  EXPECT_FALSE(interpreter_agrees(no_cookie.reader(), kRuntime, version, layout));
  EXPECT_FALSE(interpreter_agrees(debug_offsets().reader(), kRuntime, 0x030d01f0, layout)) << "another 3.13";
  // Before 3.13 there is nothing to read: the offsets are the headers'.
  EXPECT_TRUE(interpreter_agrees(FakeMemory().reader(), kRuntime, 0x030c01f0, *cpython_layout(0x030c01f0)));
}

TEST(PythonStack, AnUnreadableLinkGivesNoStackRatherThanAPartOfOne) {
  auto memory = interpreter_running({{0xa000, 10, false}, {0xb000, 40, true}});
  for (int i = 0; i < 8; ++i) memory.forget(0x40000 + kLayout.frame_previous + i);
  EXPECT_TRUE(read_python_stack(memory.reader(), kLayout, kRuntime, 202).empty());
  EXPECT_TRUE(read_python_stack(memory.reader(), kLayout, kRuntime + 8, 202).empty());  // not _PyRuntime
}

TEST(PythonStack, AChainThatLoopsEndsAtTheBound) {
  auto memory = interpreter_running({{0xa000, 10, false}, {0xb000, 40, true}});
  memory.word(0x40100 + kLayout.frame_previous, 0x40000);  // torn: the outer frame points back in
  EXPECT_TRUE(read_python_stack(memory.reader(), kLayout, kRuntime, 202).empty());
}

TEST(PythonStack, TheInnermostFunctionIsThePlaceWhereverItsLoopIs) {
  const auto at = [](long offset) {
    const auto memory = interpreter_running({{0xa000, offset, false}, {0xb000, 40, true}});
    return python_place(read_python_stack(memory.reader(), kLayout, kRuntime, 202));
  };
  EXPECT_NE(at(10), 0u);
  EXPECT_EQ(at(10), at(24));  // a spin in one function
  // The caller's call is part of the place: the same function called from elsewhere is elsewhere.
  const auto other_call = interpreter_running({{0xa000, 10, false}, {0xb000, 52, true}});
  EXPECT_NE(at(10), python_place(read_python_stack(other_call.reader(), kLayout, kRuntime, 202)));
  // Another function is another place.
  const auto other_function = interpreter_running({{0xd000, 10, false}, {0xb000, 40, true}});
  EXPECT_NE(at(10), python_place(read_python_stack(other_function.reader(), kLayout, kRuntime, 202)));
}

TEST(PythonStack, AFrameBeingSetUpIsNotAPlaceYet) {
  for (const std::uint32_t version : kVersions) {
    SCOPED_TRACE(std::to_string(version >> 16 & 0xff));
    const CPythonLayout layout = *cpython_layout(version);
    const auto memory = interpreter_running({{0xe000, -1, true}, {0xa000, 10, false}, {0xb000, 40, true}}, layout);
    const auto frames = read_python_stack(memory.reader(), layout, kRuntime, 202);
    ASSERT_EQ(frames.size(), 3u);
    EXPECT_EQ(frames[0].instruction, 0u);
    EXPECT_NE(frames[1].instruction, 0u);
    const auto without = interpreter_running({{0xa000, 10, false}, {0xb000, 40, true}}, layout);
    EXPECT_EQ(python_place(frames), python_place(read_python_stack(without.reader(), layout, kRuntime, 202)));
  }
  EXPECT_EQ(python_place({}), 0u);
}

// solve() (0xb000) loops for ever, calling relax() (0xa000) on every pass; <module> (0xc000)
// called solve. A sample in relax knows where it would stand were it found in solve's own code.
TEST(PythonStack, AHelperKnowsThePlaceOfTheLoopThatCalledIt) {
  const auto places = [](const std::vector<Frame>& frames) {
    return python_places(read_python_stack(interpreter_running(frames).reader(), kLayout, kRuntime, 202));
  };
  const auto in_relax = places({{0xa000, 10, false}, {0xb000, 40, false}, {0xc000, 6, true}});
  const auto in_solve = places({{0xb000, 24, false}, {0xc000, 6, true}});
  const auto in_module = places({{0xc000, 8, true}});
  EXPECT_NE(in_relax.place, in_solve.place);
  EXPECT_EQ(in_relax.enclosing[0], in_solve.place);  // one call out: the loop, wherever its own code runs
  EXPECT_EQ(in_relax.enclosing[1], in_module.place);
  EXPECT_EQ(in_solve.enclosing[0], in_module.place);
  EXPECT_EQ(in_solve.enclosing[1], 0u);  // nothing out from the module
  EXPECT_EQ(in_module.enclosing, (stats::EnclosingPlaces{}));
  // A kernel relax calls (0xe000) has the loop two calls out and the module three.
  const auto in_kernel = places({{0xe000, 4, false}, {0xa000, 10, false}, {0xb000, 40, false}, {0xc000, 6, true}});
  EXPECT_EQ(in_kernel.enclosing[0], in_relax.place);
  EXPECT_EQ(in_kernel.enclosing[1], in_solve.place);
  EXPECT_EQ(in_kernel.enclosing[2], in_module.place);
  // Whichever line of solve called relax, the loop is one place (its own code moves); a solve
  // called from another line of the module is another.
  EXPECT_EQ(places({{0xa000, 10, false}, {0xb000, 52, false}, {0xc000, 6, true}}).enclosing[0], in_solve.place);
  EXPECT_NE(places({{0xa000, 10, false}, {0xb000, 40, false}, {0xc000, 14, true}}).enclosing[0], in_solve.place);
  // A frame being set up is not the innermost yet: its caller's places are counted from the caller.
  const auto calling = places({{0xd000, -1, false}, {0xa000, 10, false}, {0xb000, 40, false}, {0xc000, 6, true}});
  EXPECT_EQ(calling.place, in_relax.place);
  EXPECT_EQ(calling.enclosing, in_relax.enclosing);
  EXPECT_EQ(python_places({}).place, 0u);
}

TEST(PythonStack, FramesAreNamedWithTheLineOfTheirLastInstruction) {
  auto memory = interpreter_running({{0xa000, 10, false}});
  const auto ascii = [&](std::uint64_t object, const std::string& text) {
    memory.word(object + kLayout.ascii_length, text.size());
    memory.put(object + kLayout.ascii_state, "\x64\0\0\0", 4);  // compact (bit 5), ascii (bit 6)
    memory.put(object + kLayout.ascii_data, text.data(), text.size());
  };
  ascii(0x50000, "Solver.relax");
  ascii(0x51000, "solver.py");
  memory.word(0xa000 + kLayout.code_qualified_name, 0x50000);
  memory.word(0xa000 + kLayout.code_file_name, 0x51000);
  const std::int32_t first_line = 40;
  memory.put(0xa000 + kLayout.code_first_line, &first_line, sizeof first_line);
  const PythonFrame frame{.code = 0xa000, .instruction = 0xa000 + kLayout.code_instructions + 10};
  // No line table readable: the function's first line.
  EXPECT_EQ(describe_python_frame(memory.reader(), kLayout, frame), "Solver.relax (solver.py:40)");
  // Units 0-3 on line 40, units 4-7 two lines down (short and one-line forms).
  const std::uint8_t table[] = {0x80 | (0 << 3) | 3, 0, 0x80 | (12 << 3) | 3, 0, 4};
  memory.word(0x52000 + kLayout.bytes_size, sizeof table);
  memory.put(0x52000 + kLayout.bytes_data, table, sizeof table);
  memory.word(0xa000 + kLayout.code_line_table, 0x52000);
  EXPECT_EQ(describe_python_frame(memory.reader(), kLayout, frame), "Solver.relax (solver.py:42)");  // unit 5
  // A name that is not a compact ASCII string is not read.
  memory.put(0x50000 + kLayout.ascii_state, "\x20\0\0\0", 4);
  EXPECT_EQ(describe_python_frame(memory.reader(), kLayout, frame), "");
}

// CPython 3.11.2's own table for
//   def sample(n):                  (line 1)
//       total = 0
//       for i in range(n):
//           if i % 3 == 0:
//               total += i
//                                   (a blank line)
//           else:
//               total -= 1
//       return total
// and the line of every code unit, as its co_positions() gives them.
TEST(PythonStack, LinesAreCPythonsOwn) {
  const std::vector<std::uint8_t> table{
      128, 0,  216, 12, 13,  128, 69, 221, 13,  18,  144, 49,  137, 88,  140, 88,  240, 0,   5,  5,  23,  240, 0,   5,
      5,   23, 136, 1,  216, 11,  12, 136, 113, 137, 53,  144, 65,  138, 58,  136, 58,  216, 12, 17, 144, 81,  137, 74,
      136, 69, 136, 69, 240, 6,   0,  13,  18,  144, 81,  137, 74,  136, 69,  136, 69,  216, 11, 16, 128, 76};
  std::vector<int> expected(43);
  for (int unit = 0; unit < 43; ++unit) {
    expected[unit] = unit == 0    ? 1
                     : unit <= 2  ? 2
                     : unit <= 19 ? 3
                     : unit <= 28 ? 4
                     : unit <= 34 ? 5
                     : unit <= 40 ? 8
                                  : 9;
  }
  for (int unit = 0; unit < 43; ++unit) EXPECT_EQ(python_line(table, 1, unit), expected[unit]) << "unit " << unit;
  EXPECT_EQ(python_line(table, 1, 43), std::nullopt);                           // past the table
  EXPECT_EQ(python_line(std::vector<std::uint8_t>{0x05}, 1, 0), std::nullopt);  // not an entry
  // A torn or foreign table whose line deltas run past int: no line, and no overflow (UBSan).
  std::vector<std::uint8_t> huge;
  for (int entry = 0; entry < 3; ++entry) {
    huge.push_back(0x80 | (13 << 3));  // no-column form: a signed varint line delta
    std::uint32_t value = 0x7ffffffe;  // + 2^30 - 1
    for (; value >= 64; value >>= 6) huge.push_back(static_cast<std::uint8_t>(64 | (value & 63)));
    huge.push_back(static_cast<std::uint8_t>(value));
  }
  EXPECT_EQ(python_line(huge, 1, 0), 1 + 0x3fffffff);
  EXPECT_EQ(python_line(huge, 1, 1), std::numeric_limits<int>::max());  // 1 + 2 (2^30 - 1)
  EXPECT_EQ(python_line(huge, 1, 2), std::nullopt);
}

TEST(PythonStack, PythonFramesGoInsideTheInterpreterRunThatRunsThem) {
  // C frames, innermost first: a builtin, the inner run, a C call, the outer run, main.
  const std::vector<std::string> c{"long_add", "eval#1", "sorted", "eval#2", "main"};
  const std::vector<PythonFrame> python{{.code = 1, .instruction = 9, .entry = false},
                                        {.code = 2, .instruction = 9, .entry = true},
                                        {.code = 3, .instruction = 9, .entry = false},
                                        {.code = 4, .instruction = 9, .entry = true}};
  const auto merged = interleave_python_frames(
      c, python, [](const std::string& f) { return f.starts_with("eval"); },
      [&](std::size_t i) { return "py" + std::to_string(python[i].code); });
  EXPECT_EQ(merged,
            (std::vector<std::string>{"long_add", "py1", "py2", "eval#1", "sorted", "py3", "py4", "eval#2", "main"}));
  // A torn read with more Python than runs: the C frames all stay.
  const auto few = interleave_python_frames(
      std::vector<std::string>{"eval#1", "main"}, python, [](const std::string& f) { return f.starts_with("eval"); },
      [&](std::size_t i) { return "py" + std::to_string(python[i].code); });
  EXPECT_EQ(few, (std::vector<std::string>{"py1", "py2", "eval#1", "main"}));
}

// The path signature of a Python rank: the interpreter's C functions are not places, its Python
// stack is; an extension's C frames and the MPI call still count.
const std::vector<CodeRange> kMpi{{0x7000, 0x8000}};
constexpr CodeRange kEval{0x1000, 0x1800}, kLongAdd{0x1800, 0x1900}, kDictLookup{0x1900, 0x1a00},
    kPyMain{0x1a00, 0x1b00}, kNumpyKernel{0x5000, 0x5100}, kMpi4pyRecv{0x6000, 0x6100};
constexpr std::uint64_t kMainCallsEval = 0x1a40, kEvalCallsAdd = 0x1100, kEvalCallsLookup = 0x1200,
                        kEvalCallsKernel = 0x1300, kEvalCallsMpi4py = 0x1400, kMpi4pyCallsMpi = 0x6040;

std::optional<std::uint64_t> start_of(std::uint64_t address) {
  for (const auto& f : {kEval, kLongAdd, kDictLookup, kPyMain, kNumpyKernel, kMpi4pyRecv}) {
    if (f.contains(address)) return f.start;
  }
  return std::nullopt;
}
bool in_interpreter(std::uint64_t address) { return address >= 0x1000 && address < 0x2000; }

std::uint64_t signature(const std::vector<std::uint64_t>& frames, std::uint64_t python_place,
                        std::string_view mpi_function = "") {
  return path_signature(frames, true, classify_by_address(frames, true, kMpi), mpi_function, start_of, {}, {}, {},
                        in_interpreter, python_place);
}

TEST(PythonStack, ASpinInOnePythonFunctionIsOnePlaceWhicheverCFunctionRunsIt) {
  const std::uint64_t spin = 0x1234, elsewhere = 0x5678;
  const auto in_add = signature({kLongAdd.start + 8, kEvalCallsAdd, kMainCallsEval}, spin);
  const auto in_lookup = signature({kDictLookup.start + 4, kEvalCallsLookup, kMainCallsEval}, spin);
  const auto in_eval = signature({kEval.start + 0x500, kMainCallsEval}, spin);
  EXPECT_NE(in_add, 0u);
  EXPECT_EQ(in_add, in_lookup);
  EXPECT_EQ(in_add, in_eval);
  EXPECT_NE(in_add, signature({kLongAdd.start + 8, kEvalCallsAdd, kMainCallsEval}, elsewhere));
  // Without the Python stack (unreadable, another CPython) the C frames are the place, as before.
  EXPECT_NE(signature({kLongAdd.start + 8, kEvalCallsAdd, kMainCallsEval}, 0),
            signature({kDictLookup.start + 4, kEvalCallsLookup, kMainCallsEval}, 0));
}

// The places around a Python rank's are its Python stack's, with the same C part: a helper's
// enclosing[0] is the path of a sample in the loop that called it, whichever of the interpreter's
// C functions either runs. In an extension's kernel the Python function that called it is one call
// out; in a Python callback the extension runs, and in MPI, there are none.
TEST(PythonStack, AHelperOfAPythonLoopKnowsTheLoopsPathWhicheverCFunctionRunsIt) {
  const PythonPlace in_relax{0x1234, {0x5678, 0x9abc}}, in_solve{0x5678, {0x9abc, 0}};
  const auto place = [](const std::vector<std::uint64_t>& frames, const PythonPlace& python,
                        std::string_view mpi_function = "") {
    return place_signature(frames, true, classify_by_address(frames, true, kMpi), mpi_function, start_of, {}, {}, {},
                           in_interpreter, python);
  };
  const auto relax = place({kLongAdd.start + 8, kEvalCallsAdd, kMainCallsEval}, in_relax);
  const auto solve = place({kDictLookup.start + 4, kEvalCallsLookup, kMainCallsEval}, in_solve);
  EXPECT_EQ(relax.path, signature({kLongAdd.start + 8, kEvalCallsAdd, kMainCallsEval}, in_relax.place));
  EXPECT_EQ(relax.enclosing[0], solve.path);
  EXPECT_EQ(relax.enclosing[1], solve.enclosing[0]);
  EXPECT_EQ(solve.enclosing[1], 0u);
  EXPECT_EQ(relax.enclosing[0], place({kEval.start + 0x500, kMainCallsEval}, in_solve).path);
  // relax calling numpy's kernel: relax, then solve, stand around it.
  const auto kernel = place({kNumpyKernel.start + 8, kEvalCallsKernel, kMainCallsEval}, in_relax);
  EXPECT_NE(kernel.path, relax.path);
  EXPECT_EQ(kernel.enclosing[0], relax.path);
  EXPECT_EQ(kernel.enclosing[1], solve.path);
  EXPECT_EQ(kernel.enclosing[2], solve.enclosing[0]);  // and what stands around solve
  // relax as a callback the kernel runs: the kernel's frames are not the interpreter's, so no
  // sample in Python alone would have this C part.
  const auto callback =
      place({kLongAdd.start + 8, kEvalCallsAdd, kNumpyKernel.start + 0x20, kEvalCallsKernel, kMainCallsEval}, in_relax);
  EXPECT_NE(callback.path, 0u);
  EXPECT_EQ(callback.enclosing, (stats::EnclosingPlaces{}));
  EXPECT_EQ(place({0x7100, 0x7400, kMpi4pyCallsMpi, kEvalCallsMpi4py, kMainCallsEval}, in_relax, "MPI_Recv").enclosing,
            (stats::EnclosingPlaces{}));
}

TEST(PythonStack, AnExtensionsKernelAndTheMpiCallStillCount) {
  const std::uint64_t place = 0x1234;
  const auto in_kernel = signature({kNumpyKernel.start + 8, kEvalCallsKernel, kMainCallsEval}, place);
  EXPECT_NE(in_kernel, signature({kLongAdd.start + 8, kEvalCallsAdd, kMainCallsEval}, place));
  const auto in_recv =
      signature({0x7100, 0x7400, kMpi4pyCallsMpi, kEvalCallsMpi4py, kMainCallsEval}, place, "MPI_Recv");
  const auto in_send =
      signature({0x7100, 0x7400, kMpi4pyCallsMpi, kEvalCallsMpi4py, kMainCallsEval}, place, "MPI_Send");
  EXPECT_NE(in_recv, 0u);
  EXPECT_NE(in_recv, in_send);
  // The Python line that called comm.recv tells two receives of one program apart.
  EXPECT_NE(in_recv,
            signature({0x7100, 0x7400, kMpi4pyCallsMpi, kEvalCallsMpi4py, kMainCallsEval}, 0x9abc, "MPI_Recv"));
}

}  // namespace
}  // namespace parastack::sampler
