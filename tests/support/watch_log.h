// Reading a watchdog's debug log from a test: the decision lines tell when both sets' models are
// ready, which is when a test may fire its fault (a fault before that is a different, slower case).
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace parastack::testing {

// How many times `text` occurs in `log` from offset `from` on (alarms said, hangs detected).
std::size_t occurrences(const std::string& log, const std::string& text, std::size_t from = 0);

// Whether every sampled set's model holds at least `samples` samples, from the debug log's decision lines
// ("set=N S=... model_samples=K").
bool models_hold(const std::string& log, int samples);

// Polls `log()` until models_hold(log(), samples). Throws, with the log, if `running()` turns false
// first, the log shows a process that crashed (Open MPI's signal banner), or the timeout passes.
void await_models(const std::function<std::string()>& log, const std::function<bool()>& running, int samples,
                  std::chrono::seconds timeout = std::chrono::seconds(600));

}  // namespace parastack::testing
