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

namespace parastack::os {
namespace {

using namespace std::chrono_literals;

struct Ends {
  int fd[2] = {-1, -1};
  ~Ends() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
};

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
  Ends pipe;
  ASSERT_EQ(::pipe(pipe.fd), 0);
  ASSERT_EQ(::write(pipe.fd[1], kLine.data(), kLine.size()), static_cast<ssize_t>(kLine.size()));
  EXPECT_FALSE(await_output_taken(pipe.fd[1], 20ms)) << "nobody has read it";
  EXPECT_EQ(take(pipe.fd[0], kLine.size()), kLine);
  EXPECT_TRUE(await_output_taken(pipe.fd[1], 0ms));
}

TEST(OutputTaken, ItReturnsOnceAReaderTakesTheLine) {
  Ends pipe;
  ASSERT_EQ(::pipe(pipe.fd), 0);
  ASSERT_EQ(::write(pipe.fd[1], kLine.data(), kLine.size()), static_cast<ssize_t>(kLine.size()));
  std::string forwarded;
  std::thread reader([&] { forwarded = take(pipe.fd[0], kLine.size()); });
  EXPECT_TRUE(await_output_taken(pipe.fd[1], 60s));
  reader.join();
  EXPECT_EQ(forwarded, kLine);
}

TEST(OutputTaken, AUnixSocketsUntakenLineIsWaitedForToo) {
  Ends pair;
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair.fd), 0);
  ASSERT_EQ(::write(pair.fd[0], kLine.data(), kLine.size()), static_cast<ssize_t>(kLine.size()));
  EXPECT_FALSE(await_output_taken(pair.fd[0], 20ms)) << "the peer has not read it";
  EXPECT_EQ(take(pair.fd[1], kLine.size()), kLine);
  EXPECT_TRUE(await_output_taken(pair.fd[0], 0ms));
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
