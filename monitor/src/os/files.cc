#include "os/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "os/proc.h"
#include "os/scoped_fd.h"
#include "os/stopped_thread.h"

namespace parastack::os {
namespace {

// The mode a plain open(0666) would give under the process's umask (mkstemp gives 0600). Read from
// /proc (umask(2) cannot read it without changing it, for every thread, for a moment).
mode_t default_file_mode() {
  mode_t mask = 022;
  if (const auto status = read_text_file("/proc/self/status")) {
    if (const auto at = status->find("\nUmask:"); at != std::string::npos) {
      mask = static_cast<mode_t>(std::strtoul(status->c_str() + at + 7, nullptr, 8));
    }
  }
  return 0666 & ~mask;
}

std::string errno_words(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// The directories above `path` that are missing, made as `mkdir -p` would (0777 under the umask):
// `report=hangs/%j/r.json` gives each job a directory of its own, made only when it has a file.
std::optional<std::string> make_parent_directories(const std::string& path) {
  const auto parent = std::filesystem::path(path).parent_path();
  std::error_code error;
  if (parent.empty() || std::filesystem::is_directory(parent, error)) return std::nullopt;
  std::filesystem::create_directories(parent, error);
  if (error) return "cannot create the directory " + parent.string() + ": " + error.message();
  return std::nullopt;
}

bool write_all(int fd, std::string_view content) {
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    content.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

std::optional<std::string> not_a_file_problem(const std::string& path) {
  if (!path.empty() && path.back() == '/') return path + " names a directory, not a file";
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) return std::nullopt;
  return path + (S_ISDIR(st.st_mode) ? " is a directory" : " is not a regular file (a device, a pipe or a socket)");
}

std::optional<std::string> cannot_create_in(const std::string& directory) {
  std::string probe = directory + "/.parastack-probe.XXXXXX";
  const ScopedFd fd(::mkostemp(probe.data(), O_CLOEXEC));
  if (!fd.valid()) return errno_words("cannot write in", directory);
  ::unlink(probe.c_str());
  return std::nullopt;
}

std::optional<std::string> write_file_atomically(const std::string& path, std::string_view content) {
  const TerminationSignalsHeld held;  // a SIGTERM now waits until the file is whole or gone
  // Renamed over, a device would be gone: as root, `--report /dev/null` replaced /dev/null.
  if (auto problem = not_a_file_problem(path)) return problem;
  if (auto error = make_parent_directories(path)) return error;
  std::string temporary = path + ".tmp.XXXXXX";
  const ScopedFd fd(::mkostemp(temporary.data(), O_CLOEXEC));
  if (!fd.valid()) return errno_words("cannot create a file beside", path);
  const auto fail = [&](const std::string& what) {
    std::string error = errno_words(what, temporary);
    ::unlink(temporary.c_str());
    return error;
  };
  if (::fchmod(fd.get(), default_file_mode()) != 0) return fail("cannot set the mode of");
  if (!write_all(fd.get(), content)) return fail("cannot write");
  if (::fsync(fd.get()) != 0) return fail("cannot write");  // a full disk may only say so here
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    std::string error = errno_words("cannot rename " + temporary + " to", path);
    ::unlink(temporary.c_str());
    return error;
  }
  return std::nullopt;
}

AppendFile::AppendFile(const std::string& path) : path_(path) {
  if (auto error = make_parent_directories(path)) {
    error_ = *error;
    return;
  }
  if (auto problem = not_a_file_problem(path)) {
    error_ = *problem;
    return;
  }
  // O_TRUNC on a file of our own is fine; O_NOFOLLOW refuses a symbolic link planted at the name,
  // and O_NONBLOCK a pipe put there since (it would wait for a reader for ever).
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd < 0) {
    error_ = errno_words("cannot create", path);
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error_ = "cannot write " + path + ": not a regular file";
    ::close(fd);
    return;
  }
  file_ = ::fdopen(fd, "w");
  if (!file_) {
    error_ = errno_words("cannot open", path);
    ::close(fd);
  }
}

AppendFile::~AppendFile() {
  if (file_) std::fclose(file_);
}

AppendFile::AppendFile(AppendFile&& other) noexcept
    : path_(std::move(other.path_)),
      file_(std::exchange(other.file_, nullptr)),
      failed_(other.failed_),
      error_(std::move(other.error_)) {}

AppendFile& AppendFile::operator=(AppendFile&& other) noexcept {
  if (this != &other) {
    if (file_) std::fclose(file_);
    path_ = std::move(other.path_);
    file_ = std::exchange(other.file_, nullptr);
    failed_ = other.failed_;
    error_ = std::move(other.error_);
  }
  return *this;
}

bool AppendFile::write(std::string_view text) {
  if (!ok()) return false;
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0) {
    failed_ = true;
    error_ = errno_words("cannot write", path_) + " (removed: an incomplete file)";
    std::fclose(file_);
    file_ = nullptr;
    ::unlink(path_.c_str());
  }
  return !failed_;
}

}  // namespace parastack::os
