// A Python rank's own call stack (mpi4py jobs), read from CPython's memory: which Python function
// it is in, and from where each caller called. The C stack of a Python rank is the interpreter's:
// a loop in one Python function shows up in whichever of the interpreter's C functions runs its
// current bytecode (the eval loop, integer arithmetic, a dict lookup), a new place at nearly every
// sample, so a rank spinning in Python never looked still (a 4-rank mpi4py job, one rank in
// `while True`, ran 6 minutes unfound). The Python stack is the place, as the source reads.
//
// Pure: the walk reads memory through a callback, so it is unit-tested on a made-up image. CPython
// 3.11 (Debian 12's python3), 3.12 and 3.13 are read, each with the offsets taken from its own
// headers; 3.13 also publishes its offsets in the process (_Py_DebugOffsets), and the walk reads it
// only when they agree (a free-threaded build does not). Other versions are not read, and their
// ranks keep their C places (a spin in Python is then left to the S model).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "parastack/stats/verification.h"

namespace parastack::sampler {

// Where CPython keeps what the walk reads: byte offsets into its structures, for one version.
struct CPythonLayout {
  std::uint64_t runtime_interpreters_head;  // _PyRuntimeState.interpreters.head
  std::uint64_t interpreter_threads_head;   // PyInterpreterState.threads.head
  std::uint64_t thread_next;                // PyThreadState.next
  std::uint64_t thread_native_id;           // PyThreadState.native_thread_id (the kernel's tid)
  // PyThreadState.cframe (3.11, 3.12), then _PyCFrame.current_frame; 3.13 has no _PyCFrame, and
  // the current frame is PyThreadState.current_frame.
  std::optional<std::uint64_t> thread_cframe;
  std::uint64_t current_frame;
  std::uint64_t frame_code;      // _PyInterpreterFrame.f_code (f_executable in 3.13)
  std::uint64_t frame_previous;  // _PyInterpreterFrame.previous
  // _PyInterpreterFrame.prev_instr: the last instruction run (3.11, 3.12); instr_ptr in 3.13: the
  // one running, or to run next (instruction_is_next).
  std::uint64_t frame_instruction;
  bool instruction_is_next;
  // Where one run of _PyEval_EvalFrameDefault ends. 3.11 flags its outermost frame (is_entry, a
  // bool); from 3.12 a shim frame owned by the C stack (owner == FRAME_OWNED_BY_CSTACK, a char)
  // lies beyond it, which is no Python function.
  std::uint64_t frame_run_mark;
  bool shim_frames;
  std::uint64_t code_first_line;      // PyCodeObject.co_firstlineno (int)
  std::uint64_t code_file_name;       // PyCodeObject.co_filename
  std::uint64_t code_qualified_name;  // PyCodeObject.co_qualname
  std::uint64_t code_instructions;    // PyCodeObject.co_code_adaptive: the bytecode
  std::uint64_t code_line_table;      // PyCodeObject.co_linetable (bytes)
  std::uint64_t bytes_size;           // PyBytesObject.ob_size
  std::uint64_t bytes_data;           // PyBytesObject.ob_sval
  std::uint64_t ascii_length;         // PyASCIIObject.length
  std::uint64_t ascii_state;          // PyASCIIObject.state (bit 5 compact, bit 6 ascii)
  std::uint64_t ascii_data;           // sizeof(PyASCIIObject): a compact ASCII string's characters
};

// The layout of the CPython whose Py_Version is `version` (PY_VERSION_HEX), if it is one we read.
std::optional<CPythonLayout> cpython_layout(std::uint32_t version);

// Reads `length` bytes at `address` of the process; false unless all were read.
using ReadMemory = std::function<bool(std::uint64_t address, void* buffer, std::size_t length)>;

// Whether the interpreter at `runtime` agrees with `layout`: from 3.13 CPython keeps its own
// offsets at the start of _PyRuntime (_Py_DebugOffsets), which must carry its cookie, `version`,
// no free threading, and every offset the walk uses. Nothing to check before 3.13.
bool interpreter_agrees(const ReadMemory& read, std::uint64_t runtime, std::uint32_t version,
                        const CPythonLayout& layout);
// What 3.13's _Py_DebugOffsets holds where (offset in it, value) when it agrees with `layout`.
std::vector<std::pair<std::uint64_t, std::uint64_t>> debug_offsets_313(std::uint32_t version,
                                                                       const CPythonLayout& layout);

struct PythonFrame {
  std::uint64_t code = 0;         // the code object's address: the function
  std::uint64_t instruction = 0;  // its instruction's address (CPythonLayout::frame_instruction): in a caller, the call
  // The first frame of one run of the interpreter's C function _PyEval_EvalFrameDefault (Python
  // calls Python within one run; a call through C, such as a builtin calling back, starts another):
  // where the Python frames go among the C frames.
  bool entry = false;
};

// The Python frames of the thread whose kernel id is `tid`, innermost first, from the interpreter
// state at `runtime` (_PyRuntime's address). Empty when the thread runs no Python or anything read
// is unreadable or implausible (a chain longer than kMaxPythonFrames). A frame being set up (before
// its code's first instruction has run) has instruction 0. The process may run meanwhile: a rank that moves can give
// a torn chain, which is one more place it was seen at (it moved); one that stands still gives its
// stack.
inline constexpr std::size_t kMaxPythonFrames = 256;
std::vector<PythonFrame> read_python_stack(const ReadMemory& read, const CPythonLayout& layout, std::uint64_t runtime,
                                           int tid);

// "qualname (file:line)" of a frame, for people: the line of its instruction (the call, in a
// caller), or its function's first line when that is unknown; empty when unreadable.
std::string describe_python_frame(const ReadMemory& read, const CPythonLayout& layout, const PythonFrame& frame);

// The source line of the code unit (2 bytes of bytecode) at `unit`, from a 3.11+ location table
// (co_linetable, Objects/locations.md) and the function's first line; nullopt when the table does
// not cover it or gives no line.
std::optional<int> python_line(std::span<const std::uint8_t> table, int first_line, std::uint64_t unit);

// The C frames of a Python thread with its Python frames among them, both innermost first: each
// run of the interpreter (a C frame for which `is_eval_loop` holds) gets, on its inner side, the
// Python frames it runs (`python_function(i)` makes frame i's). Python frames left over (a torn
// read) are dropped; C frames are never dropped.
template <typename Frame, typename IsEvalLoop, typename PythonFunction>
std::vector<Frame> interleave_python_frames(std::vector<Frame> c_frames, const std::vector<PythonFrame>& python,
                                            IsEvalLoop is_eval_loop, PythonFunction python_function) {
  std::vector<Frame> merged;
  std::size_t p = 0;
  for (auto& frame : c_frames) {
    if (is_eval_loop(frame)) {
      while (p < python.size()) {
        merged.push_back(python_function(p));
        if (python[p++].entry) break;
      }
    }
    merged.push_back(std::move(frame));
  }
  return merged;
}

// The place a Python stack stands for in a path signature: its innermost function by code object
// (a loop's instruction moves), its callers by call (code object and instruction); frames being
// set up are not places yet. 0 when there is none.
std::uint64_t python_place(const std::vector<PythonFrame>& frames);

// A Python stack's place and the places of the functions around it, as sampler::Place has them for
// C code: `enclosing[j]` is the place the stack would have standing in the function j + 1 calls out
// from its innermost one. A loop that calls a Python helper on every pass (`while True: x =
// relax(x)`) is found in the loop and in the helper in turn, and the helper's enclosing[0] is the
// loop's place. Called through the interpreter's own C code too (a generator `sum` runs): those C
// frames are the interpreter's, no places; path_signature.h decides when C code in between counts.
struct PythonPlace {
  std::uint64_t place = 0;
  stats::EnclosingPlaces enclosing{};
};
PythonPlace python_places(const std::vector<PythonFrame>& frames);

}  // namespace parastack::sampler
