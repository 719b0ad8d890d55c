// A line of a sample trace (stats/trace.h), as `parastack replay` reads it from a file anyone may
// hand it. An observation it accepts is one the model can take (0 <= n_out <= n, a set, a finite
// time, 0 <= active_out <= active_out + waiting_out <= n_out, a finite lateness >= 0), and written back with
// format_trace_line it reads the same: every field the model uses survives the round trip
// (active_out and active_ranks describe active_path, so they are written only with stasis
// evidence, as the monitors produce them).
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "check.h"
#include "parastack/stats/trace.h"

namespace {

using parastack::stats::Observation;

void check_valid(const Observation& o) {
  FUZZ_REQUIRE(std::isfinite(o.t));
  FUZZ_REQUIRE(o.set >= 0 && o.n >= 0 && o.n_out >= 0 && o.n_out <= o.n);
  FUZZ_REQUIRE(o.active_out >= 0 && o.active_out <= o.n_out);
  FUZZ_REQUIRE(o.waiting_out >= 0 && o.active_out + o.waiting_out <= o.n_out);
  FUZZ_REQUIRE(o.active_ranks == 0 || o.active_ranks >= o.active_out);
  FUZZ_REQUIRE(std::isfinite(o.late_by) && o.late_by >= 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const auto parsed = parastack::stats::parse_trace_line(line);
  if (const auto* error = std::get_if<parastack::stats::TraceError>(&parsed)) {
    FUZZ_REQUIRE(!error->message.empty());
    return 0;
  }
  const auto& o = std::get<Observation>(parsed);
  check_valid(o);
  const std::string written = parastack::stats::format_trace_line(o);
  FUZZ_REQUIRE(written.find('\n') == std::string::npos);  // one line
  const auto reread = parastack::stats::parse_trace_line(written);
  FUZZ_REQUIRE(std::holds_alternative<Observation>(reread));
  const auto& r = std::get<Observation>(reread);
  check_valid(r);
  FUZZ_REQUIRE(r.t == o.t && r.set == o.set && r.n_out == o.n_out && r.n == o.n);
  FUZZ_REQUIRE(r.path == o.path && r.polling == o.polling && r.active_path == o.active_path);
  FUZZ_REQUIRE(r.late_by == o.late_by && r.counted == o.counted && r.progressed == o.progressed);
  FUZZ_REQUIRE(r.waiting_out == o.waiting_out);
  if (o.path != 0 || o.active_path != 0) FUZZ_REQUIRE(r.active_out == o.active_out && r.active_ranks == o.active_ranks);
  // Written once, the line is stable.
  FUZZ_REQUIRE(parastack::stats::format_trace_line(r) == written);
  return 0;
}
