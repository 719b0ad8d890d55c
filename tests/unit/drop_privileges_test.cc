// The SPANK plugin's only way out of root (spank_plugin/drop_privileges.c), on real system calls in
// a forked child: root's supplementary groups are gone, the job's are set, root cannot come back.
#include "drop_privileges.h"

#include <grp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

// Runs `body` in a child that starts with root's groups (0 and 4, as slurmstepd may have); what it
// prints on failure comes back through a pipe.
std::string in_child(bool (*body)(std::string&)) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    std::string problem;
    const gid_t roots_groups[] = {0, 4};
    if (::setgroups(2, roots_groups) != 0) problem = "setgroups as root failed";
    if (problem.empty() && !body(problem) && problem.empty()) problem = "failed";
    if (::write(fds[1], problem.data(), problem.size()) < 0) ::_exit(2);
    ::_exit(problem.empty() ? 0 : 1);
  }
  ::close(fds[1]);
  std::string out;
  char buffer[256];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) out.append(buffer, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status)) return "child crashed";
  return WEXITSTATUS(status) == 0 ? "" : (out.empty() ? "exit status " + std::to_string(WEXITSTATUS(status)) : out);
}

TEST(DropPrivileges, RootsGroupsAreDroppedAndRootCannotComeBack) {
  if (::geteuid() != 0) GTEST_SKIP() << "dropping root needs root";
  EXPECT_EQ(in_child([](std::string& problem) {
              const gid_t job_groups[] = {65534, 100};
              if (parastack_drop_to_user(65534, 65534, job_groups, 2) != 0) {
                problem = "parastack_drop_to_user failed";
                return false;
              }
              std::vector<gid_t> groups(static_cast<size_t>(::getgroups(0, nullptr)));
              ::getgroups(static_cast<int>(groups.size()), groups.data());
              std::sort(groups.begin(), groups.end());
              if (groups != std::vector<gid_t>{100, 65534}) {
                problem = "groups after the drop:";
                for (gid_t g : groups) problem += " " + std::to_string(g);
                return false;
              }
              if (::getuid() != 65534 || ::geteuid() != 65534 || ::getgid() != 65534 || ::getegid() != 65534) {
                problem = "ids after the drop are not the user's";
                return false;
              }
              if (::setuid(0) == 0 || ::setgid(0) == 0 || ::setgroups(0, nullptr) == 0) {
                problem = "root came back";
                return false;
              }
              return true;
            }),
            "");
}

TEST(DropPrivileges, BadGroupListIsRefusedBeforeAnythingChanges) {
  if (::geteuid() != 0) GTEST_SKIP() << "dropping root needs root";
  EXPECT_EQ(in_child([](std::string& problem) {
              if (parastack_drop_to_user(65534, 65534, nullptr, 3) == 0 ||
                  parastack_drop_to_user(65534, 65534, nullptr, -1) == 0) {
                problem = "a bad group list was accepted";
                return false;
              }
              if (::geteuid() != 0 || ::getgroups(0, nullptr) != 2) {
                problem = "something changed before the refusal";
                return false;
              }
              return true;
            }),
            "");
}

}  // namespace
