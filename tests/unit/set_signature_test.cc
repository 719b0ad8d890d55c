// What an observation's signatures say (stats/set_signature.h): busy-waiting ranks are told apart
// from active ones, and stay apart whether a sample finds them in the polling call or in the loop.
#include "parastack/stats/set_signature.h"

#include <gtest/gtest.h>

namespace parastack::stats {
namespace {

RankSnapshot in_mpi(const char* call, std::uint64_t path) { return {RankState::InMpi, call, path}; }
RankSnapshot out(std::uint64_t path) { return {RankState::OutMpi, {}, path}; }
const RankSnapshot unknown{RankState::Unknown, {}, 0};

TEST(SetSignatures, WithoutPollingBothSignaturesAreTheSame) {
  SetSignatures signatures;
  const auto o = signatures.observe(1, 0, {in_mpi("MPI_Recv", 10), out(11), in_mpi("MPI_Allreduce", 12), out(13)});
  EXPECT_EQ(o.n, 4);
  EXPECT_EQ(o.n_out, 2);
  EXPECT_NE(o.path, 0u);
  EXPECT_EQ(o.active_path, o.path);
  EXPECT_EQ(o.active_out, 2);
  EXPECT_FALSE(o.polling);
}

TEST(SetSignatures, BusyWaitingRanksAreLeftOutOfTheActiveSignature) {
  SetSignatures signatures;
  // Rank 1 spins at 7; the others poll in one loop (place 20), once found in its code.
  const auto a =
      signatures.observe(1, 0, {in_mpi("MPI_Test", 20), out(7), in_mpi("MPI_Testany", 20), in_mpi("MPI_Iprobe", 20)});
  const auto b = signatures.observe(2, 0, {out(20), out(7), in_mpi("MPI_Test", 20), in_mpi("MPI_Test", 20)});
  EXPECT_TRUE(signatures.is_polling_place(20));
  EXPECT_FALSE(signatures.is_polling_place(7));
  EXPECT_TRUE(a.polling);
  EXPECT_EQ(b.n_out, 2);       // S counts the poller seen in its loop code, as the paper's S does
  EXPECT_EQ(b.active_out, 1);  // ... but it waits: only the spinning rank is active
  EXPECT_EQ(a.active_path, b.active_path);
  EXPECT_NE(a.active_path, 0u);
  EXPECT_NE(a.active_path, kEveryoneWaiting);
  // The spinning rank moving is a new active signature.
  const auto c = signatures.observe(3, 0, {out(20), out(8), in_mpi("MPI_Test", 20), in_mpi("MPI_Test", 20)});
  EXPECT_NE(c.active_path, b.active_path);
}

TEST(SetSignatures, ASetOfWaitersHasNoActiveRank) {
  SetSignatures signatures;
  const auto o =
      signatures.observe(1, 0, {in_mpi("MPI_Test", 20), in_mpi("MPI_Testany", 21), unknown, in_mpi("MPI_Iprobe", 0)});
  EXPECT_EQ(o.active_path, kEveryoneWaiting);
  EXPECT_EQ(o.active_out, 0);
  // A polling call whose path is unknown (no application frame) still waits.
  const auto p = signatures.observe(2, 0, {in_mpi("MPI_Test", 0), unknown, in_mpi("MPI_Test", 0), unknown});
  EXPECT_EQ(p.active_path, kEveryoneWaiting);
  EXPECT_EQ(p.path, 0u);
}

TEST(SetSignatures, TooFewKnownRanksGiveNoSignature) {
  SetSignatures signatures;
  const auto o = signatures.observe(1, 0, {out(7), unknown, unknown, unknown});
  EXPECT_EQ(o.path, 0u);
  EXPECT_EQ(o.active_path, 0u);
  // Which ranks are known belongs to the signature: a rank that comes and goes is never still.
  const auto a = signatures.observe(2, 0, {out(7), out(8), unknown, in_mpi("MPI_Recv", 9)});
  const auto b = signatures.observe(3, 0, {out(7), out(8), in_mpi("MPI_Recv", 9), unknown});
  EXPECT_NE(a.path, b.path);
  EXPECT_NE(a.active_path, b.active_path);
}

TEST(SetSignatures, PollingPlacesAreBounded) {
  SetSignatures signatures;
  for (std::uint64_t place = 1; place <= SetSignatures::kMaxPollingPlaces + 10; ++place) {
    signatures.observe(1, 0, {in_mpi("MPI_Test", place)});
  }
  EXPECT_TRUE(signatures.is_polling_place(1));
  EXPECT_FALSE(signatures.is_polling_place(SetSignatures::kMaxPollingPlaces + 5));
}

}  // namespace
}  // namespace parastack::stats
