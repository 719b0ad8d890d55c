#include "sampler/rank_discovery.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include <unistd.h>

#include "os/host.h"
#include "os/proc.h"
#include "sampler/elf_symbols.h"

namespace parastack::sampler {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

TEST(RankIdentity, OpenMpiRankAndNamespace) {
  const auto id = rank_identity(Env{{"OMPI_COMM_WORLD_RANK", "7"},
                                    {"OMPI_COMM_WORLD_SIZE", "16"},
                                    {"PMIX_RANK", "7"},
                                    {"PMIX_NAMESPACE", "prterun-vm-123@1"}});
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

// An mpiexec.hydra (MPICH's, Intel MPI's) in a Slurm job starts its proxies with srun: under
// MpiDefault=pmix each proxy is a PMIx task, and its ranks inherit the proxy's PMIX_RANK and
// PMIX_NAMESPACE beside their own PMI_RANK (the environment seen in such a job on the test
// cluster). Read first, the inherited PMIX_RANK numbered every rank of a one-node job 0.
TEST(RankIdentity, WhatARankInheritedFromItsLauncherIsTheLaunchersNumber) {
  const Env proxy{{"PMIX_RANK", "0"},
                  {"PMIX_NAMESPACE", "slurm.pmix.2.1"},
                  {"SLURM_PROCID", "0"},
                  {"SLURM_STEP_ID", "1"},
                  {"SLURM_JOB_ID", "2"}};
  Env rank = proxy;
  rank.insert(rank.end(), {{"PMI_RANK", "3"}, {"PMI_SIZE", "4"}, {"PMI_FD", "6"}});
  const auto id = rank_identity(rank, proxy);
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->rank, 3);
  EXPECT_EQ(id->world_size, 4);
  EXPECT_EQ(id->instance, "slurm:2.1") << "the proxies' step: one instance on every node";
  // Rank 0 beside proxy 0: PMI_RANK is its own (the proxy has none), whatever its value.
  rank[rank.size() - 3].second = "0";
  EXPECT_EQ(rank_identity(rank, proxy)->rank, 0);
  // Without the launcher's environment (a root-owned slurmstepd cannot be read) the order is the
  // usual one: an Open MPI task of srun --mpi=pmix is numbered by its PMIX_RANK.
  EXPECT_EQ(rank_identity(rank)->rank, 0);
  EXPECT_EQ(rank_identity(rank)->instance, "slurm.pmix.2.1");
  // Proxies numbered by Slurm's PMI-2 (srun --mpi=pmi2): proxy 2 running rank 2 has only inherited
  // values, which are then its number.
  const Env pmi2_proxy{
      {"PMI_RANK", "2"}, {"PMI_SIZE", "4"}, {"SLURM_PROCID", "2"}, {"SLURM_STEP_ID", "1"}, {"SLURM_JOB_ID", "2"}};
  EXPECT_EQ(rank_identity(pmi2_proxy, pmi2_proxy)->rank, 2);
  Env pmi2_rank = pmi2_proxy;
  pmi2_rank[0].second = "9";
  pmi2_rank[1].second = "16";
  EXPECT_EQ(rank_identity(pmi2_rank, pmi2_proxy)->rank, 9);
  EXPECT_EQ(rank_identity(pmi2_rank, pmi2_proxy)->world_size, 16);
  // A PMIx-numbered rank keeps its namespace even when its launcher shares it (prted's ranks).
  const Env prted{{"PMIX_NAMESPACE", "prterun-vm-1@1"}, {"PMIX_RANK", "0"}};
  const auto ompi = rank_identity(Env{{"PMIX_NAMESPACE", "prterun-vm-1@1"}, {"PMIX_RANK", "5"}}, prted);
  EXPECT_EQ(ompi->rank, 5);
  EXPECT_EQ(ompi->instance, "prterun-vm-1@1");
}

TEST(RankIdentity, NotRanks) {
  EXPECT_FALSE(rank_identity(Env{{"HOME", "/root"}}).has_value());
  // The batch script has SLURM_PROCID=0 but no numbered step: it is not a rank.
  EXPECT_FALSE(rank_identity(Env{{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "batch"}}).has_value());
  EXPECT_FALSE(rank_identity(Env{{"OMPI_COMM_WORLD_RANK", "x"}}).has_value());
}

TEST(RankIdentity, LaunchersAndDaemonsAreNotRanks) {
  for (const char* name :
       {"mpirun", "orted", "prted", "srun", "slurmstepd", "hydra_pmi_proxy", "mpispawn", "parastack"}) {
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

// An srun's tasks carry its port (SLURM_SRUN_COMM_PORT), their job, and the address slurmd knows
// the srun's host by (SLURM_SRUN_COMM_HOST): an srun inside an allocation is known with its job,
// one that allocated for itself with its host's addresses, never by its port alone (another
// host's srun may listen on the same port, and its tasks may share this node).
TEST(LaunchKey, SrunTasksAreKnownByTheirSrunsPortAndJobOrHost) {
  const Env task{{"SLURM_JOB_ID", "41"},
                 {"SLURM_STEP_ID", "3"},
                 {"SLURM_SRUN_COMM_PORT", "40123"},
                 {"SLURM_SRUN_COMM_HOST", "10.0.0.7"}};
  EXPECT_EQ(srun_launch_key("40123", "41"), "srun:40123@41");
  EXPECT_EQ(srun_launch_key_from("40123", "10.0.0.7"), "srun:40123#10.0.0.7");
  EXPECT_TRUE(launched_by_srun({srun_launch_key("40123", "41")}, task));
  EXPECT_TRUE(launched_by_srun(
      {"1.0;tcp://10.0.0.1:1", srun_launch_key_from("40123", "127.0.0.1"), srun_launch_key_from("40123", "10.0.0.7")},
      task));
  EXPECT_FALSE(launched_by_srun({srun_launch_key("40123", "42")}, task)) << "another job's srun, same port";
  EXPECT_FALSE(launched_by_srun({srun_launch_key("40124", "41")}, task)) << "another srun of the job";
  EXPECT_FALSE(
      launched_by_srun({srun_launch_key_from("40123", "127.0.0.1"), srun_launch_key_from("40123", "10.0.0.8")}, task))
      << "another host's srun, same port";
  EXPECT_FALSE(launched_by_srun({srun_launch_key_from("40124", "10.0.0.7")}, task)) << "another srun of the host";
  EXPECT_FALSE(launched_by_srun({}, task));
  Env no_host = task;
  no_host.pop_back();
  EXPECT_FALSE(launched_by_srun({srun_launch_key_from("40123", "")}, no_host)) << "a port alone is no launch";
  EXPECT_FALSE(
      launched_by_srun({srun_launch_key("40123", "")}, Env{{"SLURM_SRUN_COMM_PORT", "40123"}, {"SLURM_JOB_ID", ""}}))
      << "an empty job is no job";
  EXPECT_FALSE(launched_by_srun({srun_launch_key_from("40123", "10.0.0.7")},
                                Env{{"SLURM_JOB_ID", "41"}, {"SLURM_SRUN_COMM_HOST", "10.0.0.7"}}))
      << "no port";
  EXPECT_FALSE(launched_by_srun({srun_launch_key("", "")}, Env{{"SLURM_SRUN_COMM_PORT", ""}}));
}

// This host's addresses are what slurmd may know an srun here by: loopback among them, each once.
TEST(LaunchKey, ThisHostsAddressesIncludeLoopbackOnce) {
  const auto addresses = os::host_addresses();
  EXPECT_NE(std::find(addresses.begin(), addresses.end(), "127.0.0.1"), addresses.end());
  EXPECT_TRUE(std::is_sorted(addresses.begin(), addresses.end()));
  EXPECT_EQ(std::adjacent_find(addresses.begin(), addresses.end()), addresses.end());
}

// The C library this test runs on, wherever the machine keeps it: from the test's own mappings.
std::string mapped_libc() {
  const auto maps = os::read_maps(os::Pid{::getpid()});
  if (maps) {
    for (const auto& m : *maps) {
      if (m.path.find("/libc.so") != std::string::npos) return m.path;
    }
  }
  return {};
}

TEST(ElfSymbols, FindsMpiEntryPointsPreferringTheMpiAlias) {
  // The MPI library the build found (CMake's FindMPI), not a path written here.
  const auto symbols = ElfSymbols::load(MPI_LIBRARY_PATH);
  ASSERT_TRUE(symbols);
  EXPECT_TRUE(symbols->defines("MPI_Init"));
  EXPECT_FALSE(symbols->defines("MPI_No_such_call"));
  const auto recv = symbols->address_of("PMPI_Recv");
  ASSERT_TRUE(recv.has_value());
  EXPECT_EQ(symbols->function_at(*recv), "MPI_Recv");      // weak MPI_ alias, same address
  EXPECT_EQ(symbols->function_at(*recv + 4), "MPI_Recv");  // inside it
  const std::string libc_path = mapped_libc();
  ASSERT_FALSE(libc_path.empty());
  const auto libc = ElfSymbols::load(libc_path);
  ASSERT_TRUE(libc);
  EXPECT_FALSE(libc->defines("MPI_Init"));
  EXPECT_TRUE(libc->defines("malloc"));
  EXPECT_FALSE(ElfSymbols::load(__FILE__));  // not ELF: this test's source
}

// Debian's programs are stripped (hpcc): their functions still have identities, from the unwind
// table, the same starts the symbols would give. A real program, stripped here by binutils.
TEST(ElfSymbols, AStrippedFileStillKnowsWhereItsFunctionsStart) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("parastack-strip-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string stripped = (dir / "ps_nompi").string();
  const std::string command = "strip -o '" + stripped + "' '" PS_NOMPI_BIN "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const std::string listing = "nm -S --defined-only '" PS_NOMPI_BIN "'";
  FILE* nm = ::popen(listing.c_str(), "r");
  ASSERT_NE(nm, nullptr);
  const auto named = ElfSymbols::load(PS_NOMPI_BIN);
  const auto bare = ElfSymbols::load(stripped);
  ASSERT_TRUE(named && bare);
  int functions = 0;
  char line[512];
  while (std::fgets(line, sizeof line, nm)) {
    std::istringstream fields(line);
    unsigned long long start = 0, size = 0;
    char type = 0;
    std::string name;
    if (!(fields >> std::hex >> start >> size >> type >> name)) continue;  // no size
    if ((type != 'T' && type != 't') || size < 2) continue;
    ++functions;
    EXPECT_EQ(named->function_start_at(start + size / 2), start) << name;
    EXPECT_EQ(bare->function_start_at(start + size / 2), start) << name << " (stripped)";
    EXPECT_FALSE(bare->function_at(start + size / 2).has_value()) << name;  // no name, only an identity
  }
  ::pclose(nm);
  std::filesystem::remove_all(dir);
  EXPECT_GE(functions, 3);  // main, spin_step, write_ready_file, _start
}

}  // namespace
}  // namespace parastack::sampler
