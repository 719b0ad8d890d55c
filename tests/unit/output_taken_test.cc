// os::await_output_taken on real pipes and sockets: a monitor's last lines before scancel or qdel
// wait for the process that forwards them (mpirun, srun), and for nothing else.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "os/batch_system.h"
#include "os/scoped_fd.h"

namespace parastack::os {
namespace {

using namespace std::chrono_literals;

// The two ends of a pipe or socket pair, closed with the test.
struct Ends {
  ScopedFd write, read;
  explicit Ends(const int fd[2]) : write(fd[1]), read(fd[0]) {}
};

Ends pipe_ends() {
  int fd[2] = {-1, -1};
  EXPECT_EQ(::pipe(fd), 0);
  return Ends(fd);
}

Ends socket_ends() {
  int fd[2] = {-1, -1};
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fd), 0);
  return Ends(fd);
}

std::string take(int fd, std::size_t n) {
  std::string got(n, '\0');
  std::size_t have = 0;
  while (have < n) {
    const ssize_t r = ::read(fd, got.data() + have, n - have);
    if (r <= 0) break;
    have += static_cast<std::size_t>(r);
  }
  got.resize(have);
  return got;
}

const std::string kLine = "parastack 17:59:22.368 warning: deleting job 1 (qdel)\n";

TEST(OutputTaken, APipesLastLineIsWaitedForUntilItsReaderTakesIt) {
  const Ends pipe = pipe_ends();
  ASSERT_EQ(::write(pipe.write.get(), kLine.data(), kLine.size()), static_cast<ssize_t>(kLine.size()));
  EXPECT_FALSE(await_output_taken(pipe.write.get(), 20ms)) << "nobody has read it";
  EXPECT_EQ(take(pipe.read.get(), kLine.size()), kLine);
  EXPECT_TRUE(await_output_taken(pipe.write.get(), 0ms));
}

TEST(OutputTaken, ItReturnsOnceAReaderTakesTheLine) {
  const Ends pipe = pipe_ends();
  ASSERT_EQ(::write(pipe.write.get(), kLine.data(), kLine.size()), static_cast<ssize_t>(kLine.size()));
  std::string forwarded;
  std::thread reader([&] { forwarded = take(pipe.read.get(), kLine.size()); });
  EXPECT_TRUE(await_output_taken(pipe.write.get(), 60s));
  reader.join();
  EXPECT_EQ(forwarded, kLine);
}

TEST(OutputTaken, AUnixSocketsUntakenLineIsWaitedForToo) {
  const Ends pair = socket_ends();
  ASSERT_EQ(::write(pair.write.get(), kLine.data(), kLine.size()), static_cast<ssize_t>(kLine.size()));
  EXPECT_FALSE(await_output_taken(pair.write.get(), 20ms)) << "the peer has not read it";
  EXPECT_EQ(take(pair.read.get(), kLine.size()), kLine);
  EXPECT_TRUE(await_output_taken(pair.write.get(), 0ms));
}

TEST(OutputTaken, AFileHasNothingToWaitFor) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(::write(::fileno(file), kLine.data(), kLine.size()), static_cast<ssize_t>(kLine.size()));
  EXPECT_TRUE(await_output_taken(::fileno(file), 0ms));
  std::fclose(file);
  EXPECT_TRUE(await_output_taken(-1, 0ms)) << "a closed stderr: nothing to wait for";
}

}  // namespace
}  // namespace parastack::os
