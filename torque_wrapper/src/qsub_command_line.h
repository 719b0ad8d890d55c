// What `pbs_parastack [qsub options] [script] [-- parastack options]` says, read the way Torque's
// qsub reads its own command line (getopt: "-lnodes=1" and "-l nodes=1", flags clustered as
// "-Vh"), and the few qsub options pbs_parastack itself must understand. Pure: no OS calls.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace parastack::pbs {

struct QsubCommandLine {
  // Handed to qsub verbatim, in order (all but -S and -F, which pbs_parastack carries out itself
  // inside the job, and -C, which it also reads).
  std::vector<std::string> qsub_args;
  std::optional<std::string> script;        // nullopt: the script comes on stdin, as with qsub
  std::vector<std::string> parastack_args;  // after "--"

  bool interactive = false;               // -I
  std::string mail_users;                 // -M
  std::optional<std::string> shell;       // -S: the program that runs the script (Torque's -S path[@host])
  std::vector<std::string> script_args;   // -F "arguments"
  std::string directive_prefix = "#PBS";  // -C
  bool help = false, version = false;
};

// The command line (without the program's name), or what is wrong with it in one line.
std::variant<QsubCommandLine, std::string> parse_command_line(const std::vector<std::string>& args);

// Applies the script's directives (the argument strings of its "#PBS ..." lines, read_directives)
// where the command line did not say otherwise: a directive never overrides the command line, as
// with qsub. What is wrong with one, or nothing.
std::optional<std::string> apply_directives(const std::vector<std::string>& directives, QsubCommandLine& line);

// Splits a string into words as a shell would for simple quoting ('...', "...", backslash); used
// for directive lines and -F. nullopt on an unterminated quote.
std::optional<std::vector<std::string>> split_words(std::string_view text);

}  // namespace parastack::pbs
