// Files parastack writes (os/files.h) on a real file system: never through a planted symbolic
// link, never half-written, and a full disk loses nothing.
#include "os/files.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "scratch.h"

namespace parastack::os {
namespace {

namespace fs = std::filesystem;

using testing::Scratch;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Files left in `dir` whose name holds ".tmp".
int temporaries(const fs::path& dir) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(dir))
    n += entry.path().filename().string().find(".tmp") != std::string::npos;
  return n;
}

TEST(Files, AReportReplacesALinkPlantedAtItsNameWithoutFollowingIt) {
  Scratch dir, elsewhere;
  const fs::path victim = elsewhere.path() / "victim";
  std::ofstream(victim) << "keep";
  fs::create_symlink(victim, dir.path() / "report.json");
  EXPECT_EQ(write_file_atomically((dir.path() / "report.json").string(), "the report"), std::nullopt);
  EXPECT_EQ(read(victim), "keep");
  EXPECT_FALSE(fs::is_symlink(dir.path() / "report.json"));
  EXPECT_EQ(read(dir.path() / "report.json"), "the report");
  EXPECT_EQ(temporaries(dir.path()), 0);
}

TEST(Files, AReportHasTheModeTheUmaskGives) {
  Scratch dir;
  const mode_t previous = ::umask(027);
  const auto error = write_file_atomically((dir.path() / "r.txt").string(), "x");
  ::umask(previous);
  ASSERT_EQ(error, std::nullopt);
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() / "r.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST(Files, AnUnwritableDirectoryIsAClearError) {
  EXPECT_NE(write_file_atomically("/proc/parastack-report.json", "x").value_or("").find("cannot create"),
            std::string::npos);
}

// `report=hangs/%j/r.json`: the directories are made with the first file, as `mkdir -p` makes them;
// a file in the way is a clear error and is left as it was.
TEST(Files, MissingDirectoriesAreMadeWithTheFirstFile) {
  Scratch dir;
  const mode_t previous = ::umask(027);
  const auto error = write_file_atomically((dir.path() / "hangs" / "12" / "r.json").string(), "the report");
  AppendFile trace((dir.path() / "traces" / "12" / "t.jsonl").string());
  ::umask(previous);
  ASSERT_EQ(error, std::nullopt);
  EXPECT_EQ(read(dir.path() / "hangs" / "12" / "r.json"), "the report");
  ASSERT_TRUE(trace.ok()) << trace.error();
  EXPECT_TRUE(trace.write("a\n"));
  EXPECT_EQ(read(dir.path() / "traces" / "12" / "t.jsonl"), "a\n");
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() / "hangs" / "12").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0750u);

  std::ofstream(dir.path() / "a-file") << "keep";
  EXPECT_NE(write_file_atomically((dir.path() / "a-file" / "r.json").string(), "x")
                .value_or("")
                .find("cannot create the directory " + (dir.path() / "a-file").string()),
            std::string::npos);
  AppendFile refused((dir.path() / "a-file" / "t.jsonl").string());
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("cannot create the directory"), std::string::npos) << refused.error();
  EXPECT_EQ(read(dir.path() / "a-file"), "keep");
}

TEST(Files, TheTraceRefusesALinkPlantedAtItsName) {
  Scratch dir, elsewhere;
  const fs::path victim = elsewhere.path() / "victim";
  std::ofstream(victim) << "keep";
  fs::create_symlink(victim, dir.path() / "trace.jsonl");
  AppendFile trace((dir.path() / "trace.jsonl").string());
  EXPECT_FALSE(trace.ok());
  EXPECT_NE(trace.error().find("cannot create"), std::string::npos) << trace.error();
  EXPECT_FALSE(trace.write("line\n"));
  EXPECT_EQ(read(victim), "keep");
}

// What is at the name and is no file is refused and left as it was: a directory, a pipe, and (as
// root, who may make one) a device like /dev/null, which the rename of a report replaced with a
// plain file (`parastack run --report /dev/null` as root, 2026-12-07). Nor does the trace open a
// pipe, where it would wait for a reader for ever. A name ending in '/' names no file.
TEST(Files, ADirectoryAPipeOrADeviceAtTheNameIsRefusedAndLeftAsItWas) {
  Scratch dir;
  fs::create_directory(dir.path() / "a-dir");
  ASSERT_EQ(::mkfifo((dir.path() / "a-pipe").c_str(), 0600), 0);
  std::vector<std::pair<std::string, std::string>> cases{{"a-dir", "is a directory"},
                                                         {"a-pipe", "is not a regular file"}};
  if (::geteuid() == 0 && ::mknod((dir.path() / "null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) {
    cases.emplace_back("null", "is not a regular file");
  }
  for (const auto& [name, words] : cases) {
    SCOPED_TRACE(name);
    const std::string path = (dir.path() / name).string();
    struct stat before {};
    ASSERT_EQ(::lstat(path.c_str(), &before), 0);
    EXPECT_NE(write_file_atomically(path, "the report").value_or("").find(words), std::string::npos);
    AppendFile trace(path);
    EXPECT_FALSE(trace.ok());
    EXPECT_NE(trace.error().find(words), std::string::npos) << trace.error();
    struct stat after {};
    ASSERT_EQ(::lstat(path.c_str(), &after), 0);
    EXPECT_EQ(after.st_mode & S_IFMT, before.st_mode & S_IFMT) << "replaced";
    EXPECT_EQ(after.st_ino, before.st_ino);
  }
  EXPECT_EQ(cases.size(), ::geteuid() == 0 ? 3u : 2u);
  EXPECT_NE(write_file_atomically((dir.path() / "a-dir/").string(), "x").value_or("").find("names a directory"),
            std::string::npos);
  EXPECT_EQ(temporaries(dir.path()), 0);
  EXPECT_TRUE(fs::is_empty(dir.path() / "a-dir"));
}

TEST(Files, TheTraceAppendsLineByLine) {
  Scratch dir;
  AppendFile trace((dir.path() / "trace.jsonl").string());
  ASSERT_TRUE(trace.ok()) << trace.error();
  EXPECT_TRUE(trace.write("a\n"));
  EXPECT_TRUE(trace.write("b\n"));
  EXPECT_EQ(read(dir.path() / "trace.jsonl"), "a\nb\n");  // flushed at every line
}

// A full disk: a 16 KiB tmpfs, mounted in a private mount namespace of a child process (root).
TEST(Files, AFullDiskIsAClearErrorAndLosesNothing) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  Scratch dir;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    std::string result;
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", dir.path().c_str(), "tmpfs", 0, "size=16k") != 0) {
      result = "cannot mount a tmpfs";
    } else {
      const std::string path = (dir.path() / "report.json").string();
      const auto first = write_file_atomically(path, std::string(4096, 'a'));
      const auto full = write_file_atomically(path, std::string(64 * 1024, 'b'));
      AppendFile trace((dir.path() / "trace.jsonl").string());
      const bool trace_failed = !trace.write(std::string(64 * 1024, 'c'));
      if (first) result += "first write failed: " + *first + "; ";
      if (!full) result += "a 64 KiB report fitted in 16 KiB; ";
      if (full && full->find("No space left") == std::string::npos) result += "unclear error: " + *full + "; ";
      if (read(path) != std::string(4096, 'a')) result += "the older report was lost; ";
      if (temporaries(dir.path()) != 0) result += "a temporary file was left; ";
      if (!trace_failed || trace.error().find("No space left") == std::string::npos) {
        result += "the trace's full disk went unnoticed: " + trace.error() + "; ";
      }
      if (fs::exists(dir.path() / "trace.jsonl")) result += "an incomplete trace was left; ";
    }
    if (::write(fds[1], result.data(), result.size()) < 0) ::_exit(2);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string result;
  char buffer[512];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) result.append(buffer, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(result, "");
}

}  // namespace
}  // namespace parastack::os
