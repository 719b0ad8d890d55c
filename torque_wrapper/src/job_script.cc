#include "job_script.h"

#include <array>

namespace parastack::pbs {

ScriptParts split_script(std::string_view text, std::string_view prefix) {
  ScriptParts parts;
  std::size_t at = 0;
  if (text.starts_with("#!")) {
    parts.has_interpreter = true;
    at = text.find('\n');
    at = at == std::string_view::npos ? text.size() : at + 1;
  }
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    end = end == std::string_view::npos ? text.size() : end + 1;
    std::string_view line = text.substr(at, end - at);
    std::string_view content = line;
    while (!content.empty() && (content.back() == '\n' || content.back() == '\r')) content.remove_suffix(1);
    const auto first = content.find_first_not_of(" \t");
    const bool blank = first == std::string_view::npos;
    if (!blank && content[first] != '#') break;  // the first command ends the directives
    parts.header += line;
    if (parts.header.back() != '\n') parts.header += '\n';
    if (!blank && content.substr(first).starts_with(prefix)) {
      std::string_view rest = content.substr(first + prefix.size());
      // "#PBS -N x" is a directive; "#PBSX" is not.
      if (rest.empty() || rest.front() == ' ' || rest.front() == '\t') parts.directives.emplace_back(rest);
    }
    at = end;
  }
  return parts;
}

std::string end_marker(std::string_view text, std::string_view random) {
  std::string marker = "PARASTACK_SCRIPT_" + std::string(random);
  // A line equal to the marker would end the here-document early: lengthen until none is.
  while (text.find(marker) != std::string_view::npos) marker += "_";
  return marker;
}

std::optional<std::string> quote(std::string_view word) {
  std::string quoted = "'";
  for (const char c : word) {
    if (c == '\n' || c == '\0' || c == '!' || c == '\r') return std::nullopt;
    if (c == '\'') {
      quoted += "'\\''";  // close, an escaped quote, reopen: the same in sh and csh
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string wrapper_script(const ScriptParts& parts, std::string_view original_path,
                           const std::vector<std::string>& runner_argv, std::string_view text,
                           std::string_view marker) {
  std::string out = "#!/bin/sh\n" + parts.header;
  out += "# pbs_parastack: this job runs ";
  out += original_path;
  out += " (copied below at submission, unchanged)\n# under the parastack hang watchdog; see pbs_parastack(1).\nexec";
  for (const auto& word : runner_argv) out += " " + quote(word).value_or("''");
  out += " <<'";
  out += marker;
  out += "'\n";
  out += text;
  if (!text.empty() && text.back() != '\n') out += '\n';
  out += marker;
  out += "\n'";
  out += marker;
  out += "'\n";
  return out;
}

std::string script_from_here_document(std::string text, std::string_view marker) {
  const std::string last = std::string(marker) + "\n";
  if (text == last) return {};
  if (text.size() > last.size() && text.ends_with(last) && text[text.size() - last.size() - 1] == '\n') {
    text.resize(text.size() - last.size());
  }
  return text;
}

bool runs_the_wrapper(std::string_view shell) {
  const auto slash = shell.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? shell : shell.substr(slash + 1);
  constexpr std::array<std::string_view, 9> kShells{"sh", "bash", "dash", "ksh", "mksh", "zsh", "csh", "tcsh", "ash"};
  for (const auto known : kShells) {
    if (name == known) return true;
  }
  return false;
}

}  // namespace parastack::pbs
