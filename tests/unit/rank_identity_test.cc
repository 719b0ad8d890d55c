#include "sampler/rank_discovery.h"

#include <gtest/gtest.h>

#include "sampler/elf_symbols.h"

namespace parastack::sampler {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

TEST(RankIdentity, OpenMpiRankAndNamespace) {
  const auto id = rank_identity(Env{{"OMPI_COMM_WORLD_RANK", "7"}, {"OMPI_COMM_WORLD_SIZE", "16"},
                                    {"PMIX_RANK", "7"}, {"PMIX_NAMESPACE", "prterun-vm-123@1"}});
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->rank, 7);
  EXPECT_EQ(id->world_size, 16);
  EXPECT_EQ(id->instance, "prterun-vm-123@1");
}

TEST(RankIdentity, OtherMpis) {
  EXPECT_EQ(rank_identity(Env{{"PMI_RANK", "3"}, {"PMI_SIZE", "4"}})->rank, 3);
  EXPECT_EQ(rank_identity(Env{{"MV2_COMM_WORLD_RANK", "2"}})->rank, 2);
  const auto srun = rank_identity(Env{{"SLURM_PROCID", "5"}, {"SLURM_STEP_ID", "0"}, {"SLURM_JOB_ID", "42"}});
  ASSERT_TRUE(srun.has_value());
  EXPECT_EQ(srun->rank, 5);
  EXPECT_EQ(srun->instance, "slurm:42.0");
}

TEST(RankIdentity, NotRanks) {
  EXPECT_FALSE(rank_identity(Env{{"HOME", "/root"}}).has_value());
  // The batch script has SLURM_PROCID=0 but no numbered step: it is not a rank.
  EXPECT_FALSE(rank_identity(Env{{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "batch"}}).has_value());
  EXPECT_FALSE(rank_identity(Env{{"OMPI_COMM_WORLD_RANK", "x"}}).has_value());
}

TEST(RankIdentity, LaunchersAndDaemonsAreNotRanks) {
  for (const char* name : {"mpirun", "orted", "prted", "srun", "slurmstepd", "hydra_pmi_proxy", "parastack"}) {
    EXPECT_TRUE(is_launcher_or_daemon(name)) << name;
  }
  EXPECT_FALSE(is_launcher_or_daemon("lmp_mpi"));
}

// On the real Open MPI library of this machine.
TEST(LaunchKey, IsTheJobAndFirstAddressOfMpirunsUri) {
  EXPECT_EQ(sampler::launch_key("678100992.0;tcp://192.0.2.2:38231;tcp6://[fd00::2]:42633"),
            "678100992.0;tcp://192.0.2.2:38231");
  // As the ssh command line that starts orted quotes it.
  EXPECT_EQ(sampler::launch_key("\"1264975872.0;tcp://10.77.0.1:50655\""), "1264975872.0;tcp://10.77.0.1:50655");
  EXPECT_EQ(sampler::launch_key("1264975872.0"), "1264975872.0");
  EXPECT_NE(sampler::launch_key("5.0;tcp://10.0.0.1:1"), sampler::launch_key("5.0;tcp://10.0.0.2:1"));
}

TEST(ElfSymbols, FindsMpiEntryPointsPreferringTheMpiAlias) {
  const auto symbols = ElfSymbols::load("/usr/lib/x86_64-linux-gnu/libmpi.so.40");
  ASSERT_TRUE(symbols);
  EXPECT_TRUE(symbols->defines("MPI_Init"));
  EXPECT_FALSE(symbols->defines("MPI_No_such_call"));
  const auto recv = symbols->address_of("PMPI_Recv");
  ASSERT_TRUE(recv.has_value());
  EXPECT_EQ(symbols->function_at(*recv), "MPI_Recv");      // weak MPI_ alias, same address
  EXPECT_EQ(symbols->function_at(*recv + 4), "MPI_Recv");  // inside it
  const auto libc = ElfSymbols::load("/usr/lib/x86_64-linux-gnu/libc.so.6");
  ASSERT_TRUE(libc);
  EXPECT_FALSE(libc->defines("MPI_Init"));
  EXPECT_FALSE(ElfSymbols::load("/etc/hostname"));  // not ELF
}

}  // namespace
}  // namespace parastack::sampler
