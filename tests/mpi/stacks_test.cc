// parastack stacks on a real 8-rank Open MPI job: seven ranks wait in MPI_Barrier, one computes.
// The merged tree must put the computing rank alone in its equivalence class, and its DOT must
// render with Graphviz.
#include <gtest/gtest.h>

#include <signal.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "support/mpi_job.h"

namespace parastack {
namespace {

using namespace std::chrono_literals;
using testing::ChildOptions;
using testing::ChildProcess;
using testing::MpiJob;
using testing::read_file;
using testing::TempDir;
using testing::test_program;

// Runs `parastack stacks ... --format FORMAT` and returns its exit status, its stdout in `out`.
int stacks(pid_t launcher, const std::string& format, const TempDir& dir, std::string& out,
           const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv{PARASTACK_BIN, "stacks", "--pid", std::to_string(launcher), "--format", format};
  argv.insert(argv.end(), extra.begin(), extra.end());
  const auto out_path = (dir.path() / ("stacks." + format)).string();
  ChildProcess child(argv, ChildOptions{{}, out_path, (dir.path() / "err").string(), {}});
  const int status = child.wait_exit(120s);
  out = read_file(out_path);
  return status;
}

TEST(Stacks, TheOddRankOutIsAloneInItsEquivalenceClass) {
  MpiJob job(8, test_program("ps_target"), {"barrier", "compute"});
  job.wait_ready();
  TempDir dir;
  // The barrier ranks may still be on their way into MPI_Barrier: sample until the tree settles
  // into the two places this job has (a condition, bounded, not a fixed sleep).
  nlohmann::json tree;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string out;
    ASSERT_EQ(stacks(job.launcher_pid(), "json", dir, out), 0) << read_file(dir.path() / "err");
    tree = nlohmann::json::parse(out);
    if (tree["classes"].size() == 2) break;
  }
  ASSERT_EQ(tree["shape"], "2D trace/space");
  ASSERT_EQ(tree["classes"].size(), 2u) << tree.dump(2);
  EXPECT_EQ(tree["classes"][0]["ranks"], "0-6");
  EXPECT_EQ(tree["classes"][0]["representative"], 0);
  EXPECT_EQ(tree["classes"][1]["ranks"], "7");
  EXPECT_EQ(tree["classes"][1]["representative"], 7);
  const auto path = tree["classes"][1]["paths"][0];
  EXPECT_NE(std::find(path.begin(), path.end(), "compute_kernel"), path.end()) << path.dump();
  const auto barrier = tree["classes"][0]["paths"][0];
  EXPECT_EQ(barrier.back(), "MPI_Barrier") << "folded at the first MPI frame: " << barrier.dump();

  // Three samples per rank: a 3D tree with the same classes.
  std::string out;
  ASSERT_EQ(stacks(job.launcher_pid(), "json", dir, out, {"--samples", "3", "--interval", "0.05"}), 0);
  EXPECT_EQ(nlohmann::json::parse(out)["shape"], "3D trace/space/time");

  // The DOT renders with Graphviz.
  ASSERT_EQ(stacks(job.launcher_pid(), "dot", dir, out), 0);
  EXPECT_NE(out.find("digraph"), std::string::npos);
  const auto svg = dir.path() / "rendered.svg";
  const std::string dot = "dot -Tsvg " + (dir.path() / "stacks.dot").string() + " -o " + svg.string();
  ASSERT_EQ(std::system(dot.c_str()), 0) << "dot could not render the tree";
  EXPECT_NE(read_file(svg).find("<svg"), std::string::npos);
}

// A rank stopped by a signal (kill -STOP) is sampled where it stopped, said to be stopped, and left
// stopped; `parastack stack` and `ranks` say the same.
TEST(Stacks, ARankStoppedByASignalIsSaidToBeAndLeftStopped) {
  MpiJob job(4, test_program("ps_target"), {"barrier", "compute"});
  const auto ranks = job.wait_ready();
  const pid_t computing = ranks.at(3).pid;
  ASSERT_EQ(::kill(computing, SIGSTOP), 0);
  struct Continue {
    pid_t pid;
    ~Continue() { ::kill(pid, SIGCONT); }
  } continue_it{computing};
  const auto state = [&] {
    const std::string stat = read_file("/proc/" + std::to_string(computing) + "/stat");
    const auto close = stat.rfind(')');
    return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
  };
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (state() != 'T' && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(state(), 'T');
  TempDir dir;
  std::string out;
  ASSERT_EQ(stacks(job.launcher_pid(), "text", dir, out), 0) << read_file(dir.path() / "err");
  EXPECT_NE(read_file(dir.path() / "err").find("parastack stacks: note: rank(s) 3: stopped by a signal"),
            std::string::npos)
      << read_file(dir.path() / "err");
  EXPECT_NE(out.find("compute_kernel"), std::string::npos) << "its stack, where it stopped:\n" << out;
  EXPECT_EQ(state(), 'T') << "left stopped";

  const auto json_path = dir.path() / "stack.json";
  ChildProcess stack({PARASTACK_BIN, "stack", "--pid", std::to_string(computing), "--json"},
                     ChildOptions{{}, json_path.string(), (dir.path() / "stack.err").string(), {}});
  ASSERT_EQ(stack.wait_exit(60s), 0) << read_file(dir.path() / "stack.err");
  const auto sample = nlohmann::json::parse(read_file(json_path), nullptr, false);
  ASSERT_FALSE(sample.is_discarded()) << read_file(json_path);
  EXPECT_EQ(sample.value("stopped_by_signal", false), true) << sample.dump(2);

  const auto ranks_path = dir.path() / "ranks.json";
  ChildProcess listing({PARASTACK_BIN, "ranks", "--pid", std::to_string(job.launcher_pid()), "--json"},
                       ChildOptions{{}, ranks_path.string(), (dir.path() / "ranks.err").string(), {}});
  ASSERT_EQ(listing.wait_exit(60s), 0) << read_file(dir.path() / "ranks.err");
  const auto listed = nlohmann::json::parse(read_file(ranks_path), nullptr, false);
  ASSERT_TRUE(listed.is_array()) << read_file(ranks_path);
  for (const auto& entry : listed) {
    EXPECT_EQ(entry.value("stopped_by_signal", false), entry["rank"] == 3) << entry.dump();
  }
  EXPECT_EQ(state(), 'T') << "left stopped";
}

TEST(Stacks, NoRanksIsAClearError) {
  TempDir dir;
  std::string out;
  EXPECT_EQ(stacks(::getpid(), "text", dir, out), 4);
  EXPECT_NE(read_file(dir.path() / "err").find("no MPI ranks found"), std::string::npos);
}

}  // namespace
}  // namespace parastack
