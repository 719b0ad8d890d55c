#include "cli/site_config.h"

#include "cli/commands.h"
#include "cli/job_options.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace parastack::cli {
namespace {

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

}  // namespace

std::variant<std::vector<Setting>, std::string> read_site_config(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) return "cannot read " + path + ": it is a directory";
  std::ifstream in(path);
  if (!in) return "cannot read " + path + ": " + std::strerror(errno);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) return "cannot read " + path + ": " + std::strerror(errno);
  return parse_site_config(text, path);
}

std::variant<std::vector<Setting>, std::string> parse_site_config(std::string_view text, const std::string& path) {
  std::vector<Setting> settings;
  // Lines as std::getline gives them: split at each newline, the last one with or without it.
  for (std::size_t at = 0, number = 1; at < text.size(); ++number) {
    const auto end = std::min(text.find('\n', at), text.size());
    std::string line(text.substr(at, end - at));
    at = end + 1;
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const auto equals = line.find('=');
    if (equals == std::string::npos) {
      return path + " line " + std::to_string(number) + ": expected 'key = value', got '" + line + "'";
    }
    std::string value = trim(line.substr(equals + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    std::string key = trim(line.substr(0, equals));
    // A key set twice is a mistake either way round: say so rather than pick one.
    for (const auto& earlier : settings) {
      if (earlier.key == key) {
        return path + " line " + std::to_string(number) + ": '" + key + "' is set again (first on line " +
               std::to_string(earlier.line) + ")";
      }
    }
    settings.push_back({std::move(key), value, static_cast<int>(number)});
  }
  return settings;
}

std::optional<std::string> apply_site_config(CLI::App& command, const std::string& path,
                                             const std::vector<Setting>& settings) {
  for (const auto& s : settings) {
    const std::string where = path + " line " + std::to_string(s.line) + ": ";
    if (std::find(kSchedulerSettings.begin(), kSchedulerSettings.end(), s.key) != kSchedulerSettings.end()) continue;
    CLI::Option* option = nullptr;
    CLI::App theirs;  // holds a batch-only option while its value is checked
    double monitor_timeout = 0;
    try {
      option = command.get_option("--" + s.key);
    } catch (const CLI::OptionNotFound&) {
      // A setting of the batch jobs' watch that this command has no use for (monitor-timeout: one
      // node's `parastack run` has no other monitors to wait for) is theirs, not a typo; its value is
      // checked all the same (a bad one was accepted here and refused only by every submission).
      if (s.key != "monitor-timeout") return where + "unknown setting '" + s.key + "'";
      option = add_monitor_timeout_option(theirs, monitor_timeout);
    }
    if (s.key == "config") return where + "a configuration file cannot name another";
    if (option->count() > 0) continue;  // the user said otherwise on the command line
    try {
      option->add_result(s.value);
      option->run_callback();
    } catch (const CLI::Error& e) {
      return where + s.key + " = " + s.value + ": " + e.what();
    }
  }
  return std::nullopt;
}

}  // namespace parastack::cli
