// Runs a helper program (Graphviz's dot, sendmail) to completion, with its output discarded and a
// time limit, waiting for that child only.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace parastack::os {

// The program's exit status; -1 if it could not be run; -2 if it was killed at the time limit.
// `input` is its standard input (a mail for sendmail); `output`, if given, receives its standard
// output (otherwise discarded); its stderr is ours.
int run_program(const std::vector<std::string>& argv, std::chrono::seconds limit, const std::string& input = {},
                std::string* output = nullptr);

// Whether a program of that name is on PATH.
bool on_path(const std::string& program);

}  // namespace parastack::os
