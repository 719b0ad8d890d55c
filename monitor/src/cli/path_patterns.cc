#include "cli/path_patterns.h"

#include <unistd.h>

#include <stdexcept>

#include "os/batch_system.h"
#include "os/host.h"

namespace parastack::cli {
namespace {

// What %c stands for, or null when c names no field.
const std::string* field_of(char c, const PathFields& fields) {
  switch (c) {
    case 'j':
      return &fields.job;
    case 'h':
      return &fields.host;
    case 'p':
      return &fields.pid;
    case 'u':
      return &fields.user;
    default:
      return nullptr;
  }
}

}  // namespace

std::optional<std::string> path_pattern_error(std::string_view pattern) {
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    if (i + 1 == pattern.size()) return "'" + std::string(pattern) + "' ends in a lone % (%% is a % itself)";
    const char c = pattern[++i];
    if (c != '%' && !field_of(c, PathFields{})) {
      return "'" + std::string(pattern) + "' holds %" + c +
             ": a path knows %j (job id), %h (host), %p (process id), %u (user) and %% (a % itself)";
    }
  }
  return std::nullopt;
}

std::string expand_path_pattern(std::string_view pattern, const PathFields& fields) {
  if (auto error = path_pattern_error(pattern)) throw std::invalid_argument(*error);
  std::string path;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      path += pattern[i];
    } else if (const std::string* value = field_of(pattern[++i], fields)) {
      for (const char c : *value) path += c == '/' ? '_' : c;  // a value never adds a directory
    } else {
      path += '%';  // %%: the only other one path_pattern_error lets through
    }
  }
  return path;
}

std::string literal_path(std::string_view path) {
  std::string pattern;
  for (const char c : path) pattern += c == '%' ? "%%" : std::string(1, c);
  return pattern;
}

PathFields own_path_fields(std::string job) {
  std::string user = os::user_name();
  if (user.empty()) user = std::to_string(::getuid());
  return {.job = std::move(job), .host = os::host_name(), .pid = std::to_string(::getpid()), .user = user};
}

}  // namespace parastack::cli
