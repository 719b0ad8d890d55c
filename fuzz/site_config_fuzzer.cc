// The site configuration file (cli/site_config.h): a site writes it, and a user can point
// PARASTACK_CONFIG or --config at any file. parse_site_config reads exactly what the stream-based
// reader it replaced read (kept here as the reference), its settings are trimmed `key = value`
// pairs with increasing line numbers, and applying them to parastack run's own options either
// succeeds or names the line, never throws.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "check.h"
#include "cli/commands.h"
#include "cli/job_options.h"
#include "cli/site_config.h"

namespace {

using namespace parastack::cli;
using Parsed = std::variant<std::vector<Setting>, std::string>;

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

// read_site_config before parse_site_config existed, on a stream instead of a file.
Parsed reference(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  std::vector<Setting> settings;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const auto equals = line.find('=');
    if (equals == std::string::npos) {
      return path + " line " + std::to_string(number) + ": expected 'key = value', got '" + line + "'";
    }
    std::string value = trim(line.substr(equals + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    const std::string key = trim(line.substr(0, equals));
    for (const auto& earlier : settings) {
      if (earlier.key == key) {
        return path + " line " + std::to_string(number) + ": '" + key + "' is set again (first on line " +
               std::to_string(earlier.line) + ")";
      }
    }
    settings.push_back({key, value, number});
  }
  return settings;
}

bool same(const Parsed& a, const Parsed& b) {
  if (a.index() != b.index()) return false;
  if (a.index() == 1) return std::get<1>(a) == std::get<1>(b);
  const auto &x = std::get<0>(a), &y = std::get<0>(b);
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i].key != y[i].key || x[i].value != y[i].value || x[i].line != y[i].line) return false;
  }
  return true;
}

bool trimmed(const std::string& text) {
  return text.empty() || (text.find_first_of(" \t\r") != 0 && text.find_last_of(" \t\r") != text.size() - 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string path = "/etc/parastack/parastack.conf";
  const Parsed parsed = parse_site_config(text, path);
  FUZZ_REQUIRE(same(parsed, reference(text, path)));
  if (const auto* error = std::get_if<std::string>(&parsed)) {
    FUZZ_REQUIRE(error->starts_with(path + " line "));
    return 0;
  }
  const auto& settings = std::get<std::vector<Setting>>(parsed);
  int previous = 0;
  for (const auto& s : settings) {
    FUZZ_REQUIRE(s.line > previous);
    previous = s.line;
    FUZZ_REQUIRE(trimmed(s.key) && s.key.find_first_of("#=\n") == std::string::npos);
    FUZZ_REQUIRE(s.value.find_first_of("#\n") == std::string::npos);
  }
  // Applied as parastack run applies it: after parsing its command line, before running.
  CLI::App app;
  const auto run_watchdog = add_run_command(app);  // holds the options the parsed values go to
  CLI::App* run = app.get_subcommand("run");
  app.parse(std::vector<std::string>{"run"});
  const auto error = apply_site_config(*run, path, settings);
  if (error) {
    FUZZ_REQUIRE(error->starts_with(path + " line "));
  } else {
    // Every setting named an option, now given, or is a scheduler's setting or a batch job's
    // option (monitor-timeout) that parastack run skips.
    for (const auto& s : settings) {
      if (std::find(kSchedulerSettings.begin(), kSchedulerSettings.end(), s.key) != kSchedulerSettings.end()) continue;
      const CLI::Option* option = run->get_option_no_throw("--" + s.key);
      if (!option) {
        FUZZ_REQUIRE(std::find(kJobOptions.begin(), kJobOptions.end(), s.key) != kJobOptions.end());
        continue;
      }
      FUZZ_REQUIRE(s.key != "config" && option->count() > 0);
    }
  }
  return 0;
}
