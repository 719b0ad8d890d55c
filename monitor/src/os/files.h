// Files parastack writes (reports, traces) where other people may also write: never through a
// symbolic link someone left at the name, never half-written. Both below make the missing
// directories above the file first, as `mkdir -p` does.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace parastack::os {

// Writes `content` to `path` whole or not at all: a new temporary file beside it (O_EXCL, random
// name, so no link is followed), written, flushed to disk, then renamed over `path` (a link at
// `path` is replaced, never followed). On failure (a full disk, no permission) the temporary file
// is removed, an older file at `path` is left as it was, and the error comes back in words.
// Termination signals wait until it is done, so only SIGKILL can leave a temporary file behind.
// A path that ends in '/' or is a directory, a device, a pipe or a socket is refused (renamed over,
// `/dev/null` itself would be replaced); a symbolic link is replaced, as above.
std::optional<std::string> write_file_atomically(const std::string& path, std::string_view content);

// Why `path` cannot take a file of ours, in words ("/dev/null is not a regular file (...)"), or
// nothing: a path ending in '/', or an existing directory, device, pipe or socket. A regular file,
// a symbolic link (replaced, never followed) and nothing at all are fine.
std::optional<std::string> not_a_file_problem(const std::string& path);

// Whether a file can be created in `directory`, by creating one and removing it: access(W_OK)
// says yes to root in /proc or on a read-only mount. Nothing, or why not in words.
std::optional<std::string> cannot_create_in(const std::string& directory);

// A file written line by line as the watch goes (the sample trace): created anew, not through a
// symbolic link (O_NOFOLLOW), readable by its owner and, as the umask allows, others. A file that
// cannot be written whole (a full disk) is removed at the first failed write: an incomplete trace
// would replay to a different story.
class AppendFile {
 public:
  AppendFile() = default;
  // Check ok() afterwards; error() says why not.
  explicit AppendFile(const std::string& path);
  ~AppendFile();
  AppendFile(AppendFile&& other) noexcept;
  AppendFile& operator=(AppendFile&& other) noexcept;
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  bool ok() const { return file_ != nullptr && !failed_; }
  const std::string& error() const { return error_; }
  // Appends and flushes; false (and error() set) once a write fails, e.g. on a full disk.
  bool write(std::string_view text);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  bool failed_ = false;
  std::string error_;
};

}  // namespace parastack::os
