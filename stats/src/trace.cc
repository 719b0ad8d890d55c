#include "parastack/stats/trace.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

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
  if (!read_field(json, "t", observation.t, error) ||
      !read_field(json, "set", observation.set, error) ||
      !read_field(json, "n_out", observation.n_out, error) ||
      !read_field(json, "n", observation.n, error)) {
    return TraceError{error};
  }
  if (observation.n < 0 || observation.n_out < 0 || observation.n_out > observation.n) {
    return TraceError{"needs 0 <= n_out <= n"};
  }
  if (observation.set < 0) return TraceError{"\"set\" must not be negative"};
  // Stasis evidence, optional: traces written before it existed replay without it.
  if (auto path = json.find("path"); path != json.end()) {
    if (!path->is_string()) return TraceError{"\"path\" must be a hexadecimal string"};
    const auto& text = path->get_ref<const std::string&>();
    if (text.empty() || text.size() > 16 ||
        text.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
      return TraceError{"\"path\" must be a hexadecimal string"};
    }
    observation.path = std::stoull(text, nullptr, 16);
  }
  if (auto polling = json.find("polling"); polling != json.end()) {
    if (!polling->is_boolean()) return TraceError{"\"polling\" must be true or false"};
    observation.polling = polling->get<bool>();
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
  return json.dump();
}

}  // namespace parastack::stats
