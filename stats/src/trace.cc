#include "parastack/stats/trace.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

namespace parastack::stats {
namespace {

template <typename T>
bool read_field(const nlohmann::json& object, const char* name, T& out, std::string& error) {
  auto it = object.find(name);
  if (it == object.end()) {
    error = std::string("missing field \"") + name + "\"";
    return false;
  }
  if constexpr (std::is_integral_v<T>) {
    if (!it->is_number_integer()) {
      error = std::string("field \"") + name + "\" must be an integer";
      return false;
    }
    const auto value = it->get<long long>();
    if (value < std::numeric_limits<T>::min() || value > std::numeric_limits<T>::max()) {
      error = std::string("field \"") + name + "\" is out of range";
      return false;
    }
    out = static_cast<T>(value);
  } else {
    if (!it->is_number() || !std::isfinite(it->get<double>())) {
      error = std::string("field \"") + name + "\" must be a finite number";
      return false;
    }
    out = it->get<T>();
  }
  return true;
}

}  // namespace

std::variant<Observation, TraceError> parse_trace_line(std::string_view line) {
  auto json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return TraceError{"not valid JSON"};
  if (!json.is_object()) return TraceError{"not a JSON object"};
  Observation observation;
  std::string error;
  if (!read_field(json, "t", observation.t, error) || !read_field(json, "set", observation.set, error) ||
      !read_field(json, "n_out", observation.n_out, error) || !read_field(json, "n", observation.n, error)) {
    return TraceError{error};
  }
  if (observation.n < 0 || observation.n_out < 0 || observation.n_out > observation.n) {
    return TraceError{"needs 0 <= n_out <= n"};
  }
  if (observation.set < 0) return TraceError{"\"set\" must not be negative"};
  // Stasis evidence, optional: traces written before it existed replay without it.
  auto read_hex = [&json](const char* name, std::uint64_t& out) -> std::optional<TraceError> {
    auto it = json.find(name);
    if (it == json.end()) return std::nullopt;
    const std::string message = std::string("\"") + name + "\" must be a hexadecimal string";
    if (!it->is_string()) return TraceError{message};
    const auto& text = it->get_ref<const std::string&>();
    if (text.empty() || text.size() > 16 || text.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
      return TraceError{message};
    }
    out = std::stoull(text, nullptr, 16);
    return std::nullopt;
  };
  if (auto bad = read_hex("path", observation.path)) return *bad;
  if (auto polling = json.find("polling"); polling != json.end()) {
    if (!polling->is_boolean()) return TraceError{"\"polling\" must be true or false"};
    observation.polling = polling->get<bool>();
  }
  if (auto counted = json.find("counted"); counted != json.end()) {
    if (!counted->is_boolean()) return TraceError{"\"counted\" must be true or false"};
    observation.counted = counted->get<bool>();
  }
  if (auto progressed = json.find("progressed"); progressed != json.end()) {
    if (!progressed->is_boolean()) return TraceError{"\"progressed\" must be true or false"};
    observation.progressed = progressed->get<bool>();
  }
  if (json.contains("late_by")) {
    if (!read_field(json, "late_by", observation.late_by, error)) return TraceError{error};
    if (observation.late_by < 0) return TraceError{"\"late_by\" must not be negative"};
  }
  if (json.contains("active")) {
    if (auto bad = read_hex("active", observation.active_path)) return *bad;
    if (json.contains("active_out") && !read_field(json, "active_out", observation.active_out, error)) {
      return TraceError{error};
    }
    if (observation.active_out < 0 || observation.active_out > observation.n_out) {
      return TraceError{"needs 0 <= active_out <= n_out"};
    }
    if (json.contains("active_ranks")) {
      if (!read_field(json, "active_ranks", observation.active_ranks, error)) return TraceError{error};
      if (observation.active_ranks < observation.active_out) return TraceError{"needs active_out <= active_ranks"};
    }
  } else if (!observation.polling) {
    // A trace from before active signatures: with nobody polling, every known rank was active.
    observation.active_path = observation.path;
    observation.active_out = observation.path != 0 ? observation.n_out : 0;
  }
  if (json.contains("waiting_out")) {
    if (!read_field(json, "waiting_out", observation.waiting_out, error)) return TraceError{error};
    if (observation.waiting_out < 0 || observation.active_out + observation.waiting_out > observation.n_out) {
      return TraceError{"needs 0 <= waiting_out <= n_out - active_out"};
    }
  }
  if (json.contains("finished")) {
    if (!read_field(json, "finished", observation.finished, error)) return TraceError{error};
    if (observation.finished < 0 || observation.finished + observation.active_ranks > observation.n) {
      return TraceError{"needs 0 <= finished <= n - active_ranks"};
    }
  }
  if (json.contains("at_work_outside")) {
    if (!read_field(json, "at_work_outside", observation.at_work_outside, error)) return TraceError{error};
    if (observation.at_work_outside < 0 || observation.at_work_outside > observation.n - observation.n_out) {
      return TraceError{"needs 0 <= at_work_outside <= n - n_out"};
    }
  }
  if (auto serial_end = json.find("serial_end"); serial_end != json.end()) {
    if (!serial_end->is_boolean()) return TraceError{"\"serial_end\" must be true or false"};
    observation.serial_end = serial_end->get<bool>();
  }
  return observation;
}

std::string format_trace_line(const Observation& o) {
  nlohmann::json json{{"t", o.t}, {"set", o.set}, {"n_out", o.n_out}, {"n", o.n}};
  if (o.path != 0) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(o.path));
    json["path"] = hex;
  }
  if (o.polling) json["polling"] = true;
  if (o.counted) json["counted"] = true;
  if (o.progressed) json["progressed"] = true;
  if (o.late_by > 0) json["late_by"] = o.late_by;
  if (o.finished != 0) json["finished"] = o.finished;
  if (o.waiting_out != 0) json["waiting_out"] = o.waiting_out;
  if (o.at_work_outside != 0) json["at_work_outside"] = o.at_work_outside;
  if (o.serial_end) json["serial_end"] = true;
  if (o.path != 0 || o.active_path != 0) {
    // Written whenever there is stasis evidence, 0 included, so a replay never has to guess it.
    char hex[17];
    std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(o.active_path));
    json["active"] = hex;
    if (o.active_out != 0) json["active_out"] = o.active_out;
    if (o.active_ranks != 0) json["active_ranks"] = o.active_ranks;
  }
  return json.dump();
}

}  // namespace parastack::stats
