// The sample trace: JSON Lines, one observation per line,
//   {"t": <seconds since start>, "set": <0 or 1>, "n_out": <int>, "n": <int>,
//    "path": "<hex signature of the set's call paths>", "polling": true}
// "path" and "polling" are optional (absent: unknown path, no polling), so traces written before
// they existed still replay. Extra fields are allowed and ignored. Every monitor writes one next to its report, and
// `parastack replay` feeds it back to the model. See docs/report-format.md.
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include "parastack/stats/observation.h"

namespace parastack::stats {

struct TraceError {
  std::string message;
};

// One line of a trace. Blank lines are not observations: the caller skips them.
std::variant<Observation, TraceError> parse_trace_line(std::string_view line);

std::string format_trace_line(const Observation& observation);

}  // namespace parastack::stats
