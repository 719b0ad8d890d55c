#include "sampler/path_signature.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace parastack::sampler {
namespace {

using stats::RankState;

// A made-up layout: libmpi's code at 0x7000-0x8000; application functions at known ranges, whose
// identity is where they start, as ProcessImage::function_start gives it.
const std::vector<CodeRange> kMpi{{0x7000, 0x8000}};
constexpr CodeRange kMain{0x1000, 0x1100}, kSolve{0x1100, 0x1200}, kPollLoop{0x1200, 0x1300}, kRelax{0x1300, 0x1400},
    kRelaxKernel{0x1400, 0x1500}, kLibcStart{0x9000, 0x9100};
constexpr std::uint64_t kMpiInternals = 0x7100, kMpiEntry = 0x7400;
// Return addresses: main's call of solve / of poll_loop, and libc's call of main.
constexpr std::uint64_t kMainCallsSolve = 0x1040, kMainCallsSolveElsewhere = 0x1060, kMainCallsPollLoop = 0x1080,
                        kLibcCallsMain = 0x9050, kSolveCallsRelax = 0x1150, kRelaxCallsKernel = 0x1350;

std::optional<std::uint64_t> start_of(std::uint64_t address) {
  for (const auto& f : {kMain, kSolve, kPollLoop, kRelax, kRelaxKernel, kLibcStart}) {
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

TEST(PathSignature, AHelperKnowsThePlaceOfTheLoopThatCalledIt) {
  // solve() loops, calling relax() on every pass; main called solve, libc called main.
  const auto place = [](const std::vector<std::uint64_t>& frames, std::string_view mpi_function = "",
                        const RuntimeCode& runtime = {}) {
    return place_signature(frames, true, classify_by_address(frames, true, kMpi), mpi_function, start_of, runtime);
  };
  const auto in_solve = place({kSolve.start + 0x40, kMainCallsSolve, kLibcCallsMain});
  const auto in_relax = place({kRelax.start + 0x10, kSolveCallsRelax, kMainCallsSolve, kLibcCallsMain});
  EXPECT_NE(in_relax.path, in_solve.path);
  EXPECT_EQ(in_relax.path, signature({kRelax.start + 0x10, kSolveCallsRelax, kMainCallsSolve, kLibcCallsMain}));
  EXPECT_EQ(in_relax.enclosing[0], in_solve.path);          // one call out: the loop
  EXPECT_EQ(in_relax.enclosing[1], in_solve.enclosing[0]);  // two: main
  EXPECT_EQ(in_solve.enclosing[0], place({kMain.start + 0x10, kLibcCallsMain}).path);
  EXPECT_NE(in_relax.enclosing[0], place({kSolve.start + 0x40, kMainCallsSolveElsewhere, kLibcCallsMain}).path);
  // A kernel relax() calls has the loop two calls out, main three.
  const auto in_kernel =
      place({kRelaxKernel.start + 0x20, kRelaxCallsKernel, kSolveCallsRelax, kMainCallsSolve, kLibcCallsMain});
  EXPECT_EQ(in_kernel.enclosing[0], in_relax.path);
  EXPECT_EQ(in_kernel.enclosing[1], in_solve.path);
  EXPECT_EQ(in_kernel.enclosing[2], in_solve.enclosing[0]);
  // A rank in MPI is at its call: no places around it.
  const auto in_recv =
      place({kMpiInternals, kMpiEntry, kSolve.start + 0x20, kMainCallsSolve, kLibcCallsMain}, "MPI_Recv");
  EXPECT_NE(in_recv.path, 0u);
  EXPECT_EQ(in_recv.enclosing, (stats::EnclosingPlaces{}));
  // A caller in the C runtime is none, nor anything out from it (libc calling main, qsort calling
  // a comparison).
  const auto libc = [](std::uint64_t address) { return kLibcStart.contains(address); };
  const auto in_solve_libc = place({kSolve.start + 0x40, kMainCallsSolve, kLibcCallsMain}, "", libc);
  EXPECT_EQ(in_solve_libc.enclosing[0], in_solve.enclosing[0]);
  EXPECT_EQ(in_solve_libc.enclosing[1], 0u);
  // Nor does an unknown one.
  EXPECT_EQ(place({kSolve.start + 0x40, 0x5000, kLibcCallsMain}).enclosing, (stats::EnclosingPlaces{}));
}

// OpenMP: solve() runs `#pragma omp parallel for` over and over. The compiler outlines the loop
// into solve._omp_fn.0, which libgomp's GOMP_parallel calls on every thread of the team; solve's
// main thread is found in the body, in libgomp at the region's closing barrier, at a worksharing
// barrier inside the body, or in solve itself between regions. As the source reads, all are solve.
TEST(PathSignature, AnOpenMpRegionIsAPlaceOfTheFunctionThatEnteredIt) {
  constexpr CodeRange kBody{0x1300, 0x1400}, kKernel{0x1400, 0x1500};
  constexpr std::uint64_t kGomp = 0x7f0000300000, kLibc = 0x7f0000100000;
  const auto openmp = [](std::uint64_t address) { return address >= kGomp && address < kGomp + 0x1000; };
  const auto c_runtime = [](std::uint64_t address) { return address >= kLibc && address < kLibc + 0x1000; };
  const auto function_of = [&](std::uint64_t address) -> std::optional<std::uint64_t> {
    for (const auto& f : {kBody, kKernel}) {
      if (f.contains(address)) return f.start;
    }
    if (openmp(address)) return kGomp + (address - kGomp) / 0x100 * 0x100;  // libgomp's functions
    return start_of(address);
  };
  // Return addresses: solve's call of GOMP_parallel, GOMP_parallel's of the body and of its
  // closing barrier, the body's of a kernel and of a worksharing barrier, a worker's thread start.
  constexpr std::uint64_t kSolveCallsGomp = kSolve.start + 0x30, kGompCallsBody = kGomp + 0x80,
                          kGompCallsEnd = kGomp + 0x88, kGompBarrier = kGomp + 0x420,
                          kBodyCallsKernel = kBody.start + 0x20, kBodyCallsBarrier = kBody.start + 0x50,
                          kGompThreadStart = kGomp + 0x610, kLibcStartThread = kLibc + 0x40, kLibcClone = kLibc + 0x90;
  auto sign = [&](const std::vector<std::uint64_t>& frames, std::string_view call = "", bool with_openmp = true) {
    return path_signature(frames, true, classify_by_address(frames, true, kMpi), call, function_of, c_runtime, {},
                          with_openmp ? sampler::RuntimeCode(openmp) : sampler::RuntimeCode{});
  };
  const std::vector<std::uint64_t> outer{kSolveCallsGomp, kMainCallsSolve, kLibcCallsMain};
  auto below = [&](std::vector<std::uint64_t> inner) {
    inner.insert(inner.end(), outer.begin(), outer.end());
    return inner;
  };
  const auto in_solve = sign({kSolve.start + 0x40, kMainCallsSolve, kLibcCallsMain});
  const auto in_body = sign(below({kBody.start + 0x10, kGompCallsBody}));
  EXPECT_NE(in_solve, 0u);
  EXPECT_EQ(in_body, in_solve);
  EXPECT_EQ(sign(below({kGomp + 0x500, kGompBarrier, kGompCallsEnd})), in_solve);        // the closing barrier
  EXPECT_EQ(sign(below({kLibc + 0x10, kGomp + 0x500, kGompCallsEnd})), in_solve);        // in a futex call
  EXPECT_EQ(sign(below({kGomp + 0x500, kBodyCallsBarrier, kGompCallsBody})), in_solve);  // inside the body
  // A function the body calls is a place of its own, as from serial code.
  const auto in_kernel = sign(below({kKernel.start + 0x10, kBodyCallsKernel, kGompCallsBody}));
  EXPECT_NE(in_kernel, 0u);
  EXPECT_NE(in_kernel, in_solve);
  // Without the predicate the body and the barrier were two places: the rank never looked still.
  EXPECT_NE(sign(below({kBody.start + 0x10, kGompCallsBody}), "", false),
            sign(below({kGomp + 0x500, kGompBarrier, kGompCallsEnd}), "", false));
  // A worker thread (sampled under MPI_THREAD_MULTIPLE) entered the region from no application
  // function: its place stays the body.
  const std::vector<std::uint64_t> worker{kBody.start + 0x10, kGompThreadStart, kLibcStartThread, kLibcClone};
  EXPECT_NE(sign(worker), 0u);
  EXPECT_EQ(sign(worker), sign(worker, "", false));
  // MPI called from the body: a blocking call is still told apart by its call site in the body, and
  // a polling loop in the body is one place whether found in MPI_Test or in its loop.
  const auto send_here = sign(below({kMpiInternals, kMpiEntry, kBody.start + 0x20, kGompCallsBody}), "MPI_Send");
  const auto send_there = sign(below({kMpiInternals, kMpiEntry, kBody.start + 0x60, kGompCallsBody}), "MPI_Send");
  EXPECT_NE(send_here, 0u);
  EXPECT_NE(send_here, send_there);
  EXPECT_EQ(sign(below({kMpiInternals, kMpiEntry, kBody.start + 0x20, kGompCallsBody}), "MPI_Test"), in_body);
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
