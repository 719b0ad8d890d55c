// The job script pbs_parastack submits in place of the user's. Pure: no OS calls.
//
// It keeps the user's directive block (so qsub reads the same #PBS lines, and names the job and
// its output files the same way), then hands the user's script, verbatim, to `pbs_parastack
// --in-job` as a here-document:
//
//   #!/bin/sh
//   #PBS -l nodes=2:ppn=8          <- the user's header, copied line for line
//   # pbs_parastack: ...
//   exec '/usr/bin/pbs_parastack' --in-job ... <<'PARASTACK_SCRIPT_3f9a...'
//   ...the user's script...
//   PARASTACK_SCRIPT_3f9a...
//   'PARASTACK_SCRIPT_3f9a...'
//
// The exec line is read alike by sh, bash, ksh, zsh, csh and tcsh: Torque runs a job script with
// the user's login shell or -S, whatever its #! line says. Only the here-document's end differs:
// sh ends it at the bare marker, csh at the marker as quoted in the exec line, so both lines are
// there and the runner drops the bare one from what csh hands it (script_from_here_document).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace parastack::pbs {

struct ScriptParts {
  bool has_interpreter = false;  // starts with "#!"
  std::string header;            // the lines after "#!" up to the first command: comments, blank lines, directives
  std::vector<std::string> directives;  // the argument strings of the header's PREFIX lines
};

// The user's script read as qsub reads it: directives are the lines of the first block of
// comments and blank lines that start with `prefix` ("#PBS").
ScriptParts split_script(std::string_view text, std::string_view prefix);

// A line that is none of the script's lines (so the here-document cannot end early), made from
// `random` (hex digits).
std::string end_marker(std::string_view text, std::string_view random);

// Quotes a word for sh and csh alike ('...'); nullopt for a word neither can carry (a newline or
// a NUL, or '!' which csh expands even inside quotes).
std::optional<std::string> quote(std::string_view word);

// The wrapper: the header, a comment naming the original, `exec RUNNER_ARGV... <<'MARKER'`, the
// script, the marker. runner_argv must be quotable (quote()).
std::string wrapper_script(const ScriptParts& parts, std::string_view original_path,
                           const std::vector<std::string>& runner_argv, std::string_view text, std::string_view marker);

// The user's script from what the here-document gave the runner: csh includes the bare marker line.
std::string script_from_here_document(std::string text, std::string_view marker);

// Whether a shell named by -S can run the wrapper (sh, bash, csh... by the program's base name).
bool runs_the_wrapper(std::string_view shell);

}  // namespace parastack::pbs
