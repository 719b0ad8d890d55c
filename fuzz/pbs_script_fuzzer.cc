// pbs_parastack's parsing of what a user hands it (torque_wrapper/src): the qsub command line, the
// job script's directive block and the wrapper script made from it. Input: the first line is the
// command line (words split as a shell would), the rest the job script. Whatever it is, parsing
// gives a result or one error, what goes to qsub reads the same when read again, the header is a prefix of the script's
// lines, the here-document marker is no line of the script, and what the here-document hands back is the script itself.
#include <cstdint>
#include <string>

#include "check.h"
#include "job_script.h"
#include "qsub_command_line.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace parastack::pbs;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto newline = input.find('\n');
  const std::string command = input.substr(0, newline);
  const std::string text = newline == std::string::npos ? "" : input.substr(newline + 1);

  if (auto words = split_words(command)) {
    auto parsed = parse_command_line(*words);
    if (auto* line = std::get_if<QsubCommandLine>(&parsed)) {
      // What goes to qsub is normalised ("-Vl x" as "-V", "-l", "x"): read again, it is the same.
      auto again = parse_command_line(line->qsub_args);
      FUZZ_REQUIRE(std::get_if<QsubCommandLine>(&again) &&
                   std::get<QsubCommandLine>(again).qsub_args == line->qsub_args);
      FUZZ_REQUIRE(!line->script || !line->script->empty());
      const auto parts = split_script(text, line->directive_prefix);
      (void)apply_directives(parts.directives, *line);
      // The header is made of the script's own lines, in order, right after the #! line.
      const std::size_t start = parts.has_interpreter ? text.find('\n') + 1 : 0;
      if (!parts.header.empty() && start <= text.size()) {
        std::string expected = text.substr(start, parts.header.size());
        if (expected.size() < parts.header.size()) expected += '\n';
        FUZZ_REQUIRE(expected == parts.header);
      }
      const std::string marker = end_marker(text, "abc");
      FUZZ_REQUIRE(text.find(marker) == std::string::npos);
      const std::string wrapper = wrapper_script(parts, "job.sh", {"/bin/cat"}, text, marker);
      // What sh reads between the exec line and the bare marker (csh: up to the quoted one).
      const std::string open = "<<'" + marker + "'\n";
      const auto body = wrapper.find(open);
      FUZZ_REQUIRE(body != std::string::npos);
      const std::string rest = wrapper.substr(body + open.size());
      const auto end = rest.find("\n" + marker + "\n");
      const std::string sh_text = rest.substr(0, end == std::string::npos ? 0 : end + 1);
      const std::string whole = text.empty() || text.back() == '\n' ? text : text + "\n";
      if (!text.empty() && text.find("\n" + marker) == std::string::npos) {
        FUZZ_REQUIRE(script_from_here_document(sh_text, marker) == whole);
        FUZZ_REQUIRE(script_from_here_document(sh_text + marker + "\n", marker) == whole);
      }
    }
  }
  return 0;
}
