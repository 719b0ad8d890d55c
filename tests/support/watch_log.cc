#include "support/watch_log.h"

#include <regex>
#include <set>
#include <stdexcept>
#include <thread>

namespace parastack::testing {

std::size_t occurrences(const std::string& log, const std::string& text, std::size_t from) {
  std::size_t n = 0;
  for (auto at = log.find(text, from); at != std::string::npos; at = log.find(text, at + 1)) ++n;
  return n;
}

bool models_hold(const std::string& log, int samples) {
  // How many sets the watchdog samples (small jobs are one set of every rank), from its own line.
  static const std::regex sets_line(R"(sampling (\d+) set\(s\) of)");
  std::smatch sets_match;
  if (!std::regex_search(log, sets_match, sets_line)) return false;
  const auto sets = static_cast<std::size_t>(std::stoi(sets_match[1]));
  static const std::regex line(R"(set=(\d) S=\S+ \w+ model_samples=(\d+))");
  std::set<std::string> ready;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it) {
    if (std::stoi((*it)[2]) >= samples) ready.insert((*it)[1]);
  }
  return ready.size() == sets;
}

void await_models(const std::function<std::string()>& log, const std::function<bool()>& running, int samples,
                  std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const std::string text = log();
    if (models_hold(text, samples)) return;
    if (!running()) throw std::runtime_error("the watchdog ended before its model was ready:\n" + log());
    // Open MPI's banner for a process that crashed (a monitor, or a rank): no test crashes one
    // before the models hold, and without this the test would wait its whole timeout while a job
    // whose monitors are gone runs on.
    if (text.find("*** Process received signal ***") != std::string::npos) {
      throw std::runtime_error("a process crashed before the model was ready:\n" + log());
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("the model was not ready in time:\n" + log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace parastack::testing
