// Writes python_stack_fuzzer's seeds into DIR: for CPython 3.11, 3.12 and 3.13, an interpreter
// whose thread 202 runs three Python frames (the inner two in one run of the eval loop, the outer
// in another), laid out with the reader's own offsets (cpython_layout), with names, files and a
// line table, and 3.13's _Py_DebugOffsets. Not run by the build: fuzz/README.md.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "sampler/python_stack.h"

namespace {

using parastack::sampler::cpython_layout;
using parastack::sampler::CPythonLayout;

constexpr std::uint64_t kBase = 0x10000;

class Image {
 public:
  void word(std::uint64_t address, std::uint64_t value) { put(address, &value, sizeof value); }
  void put(std::uint64_t address, const void* data, std::size_t length) {
    const std::size_t at = address - kBase;
    if (bytes_.size() < at + length) bytes_.resize(at + length);
    std::memcpy(bytes_.data() + at, data, length);
  }
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
};

std::vector<std::uint8_t> seed(std::uint32_t version, int choice) {
  const CPythonLayout l = *cpython_layout(version);
  Image m;
  const std::uint64_t interpreter = kBase + 0x1000, thread = kBase + 0x4000, cframe = kBase + 0x4800,
                      frames = kBase + 0x5000, codes = kBase + 0x6000, strings = kBase + 0x7000;
  if ((version >> 16) == 0x030d) {
    m.put(kBase, "xdebugpy", 8);
    for (const auto& [at, value] : parastack::sampler::debug_offsets_313(version, l)) m.word(kBase + at, value);
  }
  m.word(kBase + l.runtime_interpreters_head, interpreter);
  m.word(interpreter + l.interpreter_threads_head, thread);
  m.word(thread + l.thread_native_id, 202);
  m.word(thread + l.thread_next, 0);
  std::uint64_t holder = thread;
  if (l.thread_cframe) {
    m.word(thread + *l.thread_cframe, cframe);
    holder = cframe;
  }
  m.word(holder + l.current_frame, frames);
  const auto ascii = [&](std::uint64_t object, const std::string& text) {
    m.word(object + l.ascii_length, text.size());
    m.put(object + l.ascii_state, "\x64\0\0\0", 4);  // compact, ascii
    m.put(object + l.ascii_data, text.data(), text.size());
  };
  ascii(strings, "solver.py");
  // Three code objects (converge, main, <module>), one line table: units 0-3 on the first line,
  // 4-7 two lines down.
  const std::uint8_t table[] = {0x80 | (0 << 3) | 3, 0, 0x80 | (12 << 3) | 3, 0, 4};
  m.word(strings + 0x400 + l.bytes_size, sizeof table);
  m.put(strings + 0x400 + l.bytes_data, table, sizeof table);
  const char* names[] = {"converge", "main", "<module>"};
  std::uint64_t frame = frames;
  for (int i = 0; i < 3; ++i) {
    const std::uint64_t code = codes + 0x400 * static_cast<std::uint64_t>(i);
    ascii(strings + 0x100 + 0x80 * static_cast<std::uint64_t>(i), names[i]);
    m.word(code + l.code_qualified_name, strings + 0x100 + 0x80 * static_cast<std::uint64_t>(i));
    m.word(code + l.code_file_name, strings);
    const std::int32_t first_line = 10 * (i + 1);
    m.put(code + l.code_first_line, &first_line, sizeof first_line);
    m.word(code + l.code_line_table, strings + 0x400);
    // choice 1: the innermost frame is being set up.
    const std::uint64_t first = code + l.code_instructions;
    const std::uint64_t instruction = choice == 1 && i == 0 ? (l.instruction_is_next ? first : first - 2) : first + 10;
    const bool entry = i >= 1;  // main ends the inner run, <module> the outer
    const std::vector<std::uint8_t> zeros(0x80);
    m.put(frame, zeros.data(), zeros.size());
    m.word(frame + l.frame_code, code);
    m.word(frame + l.frame_instruction, instruction);
    std::uint64_t next = i < 2 ? frame + 0x100 : 0;
    if (entry && l.shim_frames) {
      // A shim frame owned by the C stack follows the run's outermost frame.
      const std::uint64_t shim = frame + 0x80;
      m.put(shim, zeros.data(), zeros.size());
      const std::uint8_t cstack = 3;
      m.put(shim + l.frame_run_mark, &cstack, 1);
      m.word(shim + l.frame_previous, next);
      next = shim;
    } else if (entry) {
      const std::uint8_t flag = 1;
      m.put(frame + l.frame_run_mark, &flag, 1);
    }
    // choice 2: a torn chain, the outermost frame pointing back at the innermost.
    if (choice == 2 && i == 2) next = frames;
    m.word(frame + l.frame_previous, next);
    frame += 0x100;
  }
  std::vector<std::uint8_t> input{static_cast<std::uint8_t>((version >> 16 & 0xff) - 11)};
  const std::int32_t tid = 202;
  input.insert(input.end(), reinterpret_cast<const std::uint8_t*>(&tid),
               reinterpret_cast<const std::uint8_t*>(&tid) + sizeof tid);
  input.insert(input.end(), m.bytes().begin(), m.bytes().end());
  return input;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_python_stack_seeds DIR\n";
    return 2;
  }
  const char* kinds[] = {"running", "setting-up", "torn-loop"};
  for (const std::uint32_t version : {0x030b02f0u, 0x030c01f0u, 0x030d00f0u}) {
    for (int choice = 0; choice < 3; ++choice) {
      const std::string name =
          std::string(argv[1]) + "/3." + std::to_string(version >> 16 & 0xff) + "-" + kinds[choice];
      const auto bytes = seed(version, choice);
      std::ofstream(name, std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      // What the reader makes of it, so that a seed that reads nothing is seen at once.
      const auto read = [&](std::uint64_t address, void* buffer, std::size_t length) {
        if (address < kBase || address - kBase + length > bytes.size() - 5) return false;
        std::memcpy(buffer, bytes.data() + 5 + (address - kBase), length);
        return true;
      };
      const CPythonLayout layout = *cpython_layout(version);
      std::cout << name << ":";
      if (!parastack::sampler::interpreter_agrees(read, kBase, version, layout)) std::cout << " (offsets disagree)";
      for (const auto& frame : parastack::sampler::read_python_stack(read, layout, kBase, 202)) {
        std::cout << " " << parastack::sampler::describe_python_frame(read, layout, frame) << (frame.entry ? " |" : "");
      }
      std::cout << "\n";
    }
  }
  return 0;
}
