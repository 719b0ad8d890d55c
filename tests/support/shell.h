// A shell command run to its end from a test: its exit status and its stdout (what the command
// line redirects, e.g. 2>&1, included). Header-only: the command-line tests link nothing else.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace parastack::testing {

struct ShellResult {
  int status;  // the exit status, or -1 (killed by a signal, or popen failed)
  std::string out;
};

inline ShellResult run_shell(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  std::string out;
  std::array<char, 4096> buffer{};
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) out.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace parastack::testing
