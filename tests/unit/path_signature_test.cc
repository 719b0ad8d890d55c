#include "sampler/path_signature.h"

#include <gtest/gtest.h>

#include <vector>

namespace parastack::sampler {
namespace {

using stats::RankState;

// A made-up layout: libmpi's code at 0x7000-0x8000; application functions at known ranges, whose
// identity is where they start, as ProcessImage::function_start gives it.
const std::vector<CodeRange> kMpi{{0x7000, 0x8000}};
constexpr CodeRange kMain{0x1000, 0x1100}, kSolve{0x1100, 0x1200}, kPollLoop{0x1200, 0x1300},
    kLibcStart{0x9000, 0x9100};
constexpr std::uint64_t kMpiInternals = 0x7100, kMpiEntry = 0x7400;
// Return addresses: main's call of solve / of poll_loop, and libc's call of main.
constexpr std::uint64_t kMainCallsSolve = 0x1040, kMainCallsSolveElsewhere = 0x1060, kMainCallsPollLoop = 0x1080,
                        kLibcCallsMain = 0x9050;

std::optional<std::uint64_t> start_of(std::uint64_t address) {
  for (const auto& f : {kMain, kSolve, kPollLoop, kLibcStart}) {
    if (f.contains(address)) return f.start;
  }
  return std::nullopt;
}

// Classifies the frames as the sampler does, then signs them.
std::uint64_t signature(const std::vector<std::uint64_t>& frames, std::string_view mpi_function = "",
                        bool complete = true) {
  return path_signature(frames, complete, classify_by_address(frames, complete, kMpi), mpi_function, start_of);
}

TEST(PathSignature, SpinningLoopHasOnePathWhereverItsPcIs) {
  const auto a = signature({kSolve.start + 0x10, kMainCallsSolve, kLibcCallsMain});
  const auto b = signature({kSolve.start + 0x84, kMainCallsSolve, kLibcCallsMain});
  EXPECT_NE(a, 0u);
  EXPECT_EQ(a, b);
}

TEST(PathSignature, AnotherOuterCallSiteIsAnotherPath) {
  EXPECT_NE(signature({kSolve.start + 0x10, kMainCallsSolve, kLibcCallsMain}),
            signature({kSolve.start + 0x10, kMainCallsSolveElsewhere, kLibcCallsMain}));
}

TEST(PathSignature, AnotherInnermostFunctionIsAnotherPath) {
  // The same outer call sites: main computing itself vs in a function it called.
  EXPECT_NE(signature({kMain.start + 0x10, kLibcCallsMain}), signature({kSolve.start + 0x10, kLibcCallsMain}));
}

TEST(PathSignature, PollingInMpiTestIsThePathOfTheLoopAroundIt) {
  // poll_loop: while (!done) { MPI_Test(...); ... }, seen inside MPI_Test or in its own code.
  const auto in_loop = signature({kPollLoop.start + 0x30, kMainCallsPollLoop, kLibcCallsMain});
  for (const char* polling : {"MPI_Test", "PMPI_Testall", "mpi_testsome_", "MPI_Iprobe"}) {
    const auto in_test =
        signature({kMpiInternals, kMpiEntry, kPollLoop.start + 0x18, kMainCallsPollLoop, kLibcCallsMain}, polling);
    EXPECT_NE(in_test, 0u) << polling;
    EXPECT_EQ(in_test, in_loop) << polling;
  }
}

TEST(PathSignature, BlockingCallsFromOneFunctionAreToldApartByTheirName) {
  const auto recv =
      signature({kMpiInternals, kMpiEntry, kSolve.start + 0x20, kMainCallsSolve, kLibcCallsMain}, "MPI_Recv");
  const auto allreduce =
      signature({kMpiInternals, kMpiEntry, kSolve.start + 0x48, kMainCallsSolve, kLibcCallsMain}, "MPI_Allreduce");
  EXPECT_NE(recv, 0u);
  EXPECT_NE(allreduce, 0u);
  EXPECT_NE(recv, allreduce);
  // And a rank blocked in MPI_Recv is not where the same function computing is.
  EXPECT_NE(recv, signature({kSolve.start + 0x40, kMainCallsSolve, kLibcCallsMain}));
}

TEST(PathSignature, OneBlockingCallFromTwoCallSitesIsTwoPlaces) {
  // Two MPI_Sendrecv of one loop: a rank going from one to the other has moved.
  const auto first =
      signature({kMpiInternals, kMpiEntry, kSolve.start + 0x20, kMainCallsSolve, kLibcCallsMain}, "MPI_Sendrecv");
  const auto second =
      signature({kMpiInternals, kMpiEntry, kSolve.start + 0x60, kMainCallsSolve, kLibcCallsMain}, "MPI_Sendrecv");
  EXPECT_NE(first, 0u);
  EXPECT_NE(first, second);
}

TEST(PathSignature, WhatMpiDoesInsideTheCallDoesNotCount) {
  // A deadlocked rank: MPI's progress engine is somewhere else at every sample.
  EXPECT_EQ(signature({kMpiInternals, kMpiEntry, kSolve.start + 0x20, kMainCallsSolve, kLibcCallsMain}, "MPI_Recv"),
            signature({kMpiInternals + 0x300, kMpiInternals + 0x80, kMpiEntry, kSolve.start + 0x20, kMainCallsSolve,
                       kLibcCallsMain},
                      "MPI_Recv"));
}

TEST(PathSignature, UnknownWhenTheSamplerCannotTell) {
  const std::vector<std::uint64_t> computing{kSolve.start + 0x10, kMainCallsSolve};
  // Unknown state, and a computing rank whose unwind stopped early.
  EXPECT_EQ(path_signature(computing, true, {RankState::Unknown, std::nullopt}, "", start_of), 0u);
  EXPECT_EQ(signature(computing, "", false), 0u);
  // No application frame below the MPI call.
  EXPECT_EQ(signature({kMpiInternals, kMpiEntry}, "MPI_Recv"), 0u);
  // An innermost function nobody can name.
  EXPECT_EQ(signature({0x5000, kMainCallsSolve, kLibcCallsMain}), 0u);
  // But a rank in MPI is known from an incomplete unwind, as its state is.
  EXPECT_NE(signature({kMpiInternals, kMpiEntry, kSolve.start + 0x20}, "MPI_Recv", false), 0u);
}

TEST(PathSignature, StartupAndShutdownAreNotStasis) {
  const std::vector<std::uint64_t> frames{kMpiInternals, kMpiEntry, kMain.start + 0x20, kLibcCallsMain};
  for (const char* call : {"MPI_Init", "PMPI_Init_thread", "MPI_Finalize", "mpi_init_", "MPI_INIT_THREAD",
                           "pmpi_finalize__", "ompi_mpi_finalize", "ompi_mpi_init"}) {
    EXPECT_TRUE(is_startup_or_shutdown(call)) << call;
    EXPECT_EQ(signature(frames, call), 0u) << call;
  }
  for (const char* call : {"MPI_Initialized", "MPI_Finalized", "MPI_Recv", "", "init"}) {
    EXPECT_FALSE(is_startup_or_shutdown(call)) << call;
  }
  EXPECT_NE(signature(frames, "MPI_Initialized"), 0u);
}

TEST(PathSignature, ACRuntimeCallInsideAComputingLoopIsTheLoopsPlace) {
  // A spin loop calling fmax (libm): seen in fmax, or in the loop between calls, it is one place.
  constexpr std::uint64_t kLibm = 0x7f0000100000;
  const auto runtime = [](std::uint64_t address) { return address >= kLibm && address < kLibm + 0x1000; };
  const auto in_loop = path_signature(std::vector<std::uint64_t>{kSolve.start + 0x40, kMainCallsSolve, kLibcCallsMain},
                                      true, {RankState::OutMpi, std::nullopt}, "", start_of, runtime);
  const auto in_fmax =
      path_signature(std::vector<std::uint64_t>{kLibm + 0x10, kSolve.start + 0x48, kMainCallsSolve, kLibcCallsMain},
                     true, {RankState::OutMpi, std::nullopt}, "", start_of, runtime);
  EXPECT_NE(in_loop, 0u);
  EXPECT_EQ(in_loop, in_fmax);
  // Without the predicate the call is a place of its own, as before.
  EXPECT_NE(in_fmax, path_signature(
                         std::vector<std::uint64_t>{kLibm + 0x10, kSolve.start + 0x48, kMainCallsSolve, kLibcCallsMain},
                         true, {RankState::OutMpi, std::nullopt}, "", start_of));
}

TEST(PathSignature, APmpiWrapperIsNotAPlace) {
  // A profiler's (or the fault injector's) MPI_Test around the library's: poll_loop calling it is
  // the same place as poll_loop calling MPI_Testany directly, as without the wrapper.
  constexpr CodeRange kWrapper{0x7f0000200000, 0x7f0000200100};
  const auto wrapper = [&](std::uint64_t address) { return kWrapper.contains(address); };
  auto sign = [&](const std::vector<std::uint64_t>& frames, std::string_view call) {
    return path_signature(frames, true, classify_by_address(frames, true, kMpi), call, start_of, {}, wrapper);
  };
  const auto direct =
      sign({kMpiInternals, kMpiEntry, kPollLoop.start + 0x18, kMainCallsPollLoop, kLibcCallsMain}, "MPI_Testany");
  const auto wrapped = sign(
      {kMpiInternals, kMpiEntry, kWrapper.start + 0x20, kPollLoop.start + 0x40, kMainCallsPollLoop, kLibcCallsMain},
      "MPI_Test");
  EXPECT_NE(direct, 0u);
  EXPECT_EQ(direct, wrapped);
  // A blocking call is told apart by the application's call site, not the wrapper's.
  const auto recv_here =
      sign({kMpiInternals, kMpiEntry, kWrapper.start + 0x20, kSolve.start + 0x20, kMainCallsSolve, kLibcCallsMain},
           "MPI_Recv");
  const auto recv_there =
      sign({kMpiInternals, kMpiEntry, kWrapper.start + 0x20, kSolve.start + 0x60, kMainCallsSolve, kLibcCallsMain},
           "MPI_Recv");
  EXPECT_NE(recv_here, recv_there);
}

}  // namespace
}  // namespace parastack::sampler
