// ReadOnlyMemory on this test's own process: process_vm_readv reads one's own memory like any
// other process's, and the test can map, change and unmap what it reads.
#include "sampler/read_only_memory.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "os/proc.h"

namespace parastack::sampler {
namespace {

const os::Pid kSelf{::getpid()};
// Memory in a writable mapping of the test program (.data).
char changing[64] = "written by the program";

constexpr std::size_t kPage = 4096;

std::uint64_t address_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }
// Bytes in a read-only mapping of the test program: its own code, read-only in every build.
const unsigned char* own_code() { return reinterpret_cast<const unsigned char*>(&address_of); }

// The test's own process as the sampler sees a rank's: its maps just read, checked once a sample.
struct OwnMemory {
  OwnMemory() { read_maps_again(); }
  void read_maps_again() {
    const auto maps = os::read_maps(kSelf);
    EXPECT_TRUE(maps);
    if (maps) memory.set_mappings(*maps);
    check.maps_read();
  }
  MappingCheck check{kSelf};
  ReadOnlyMemory memory{kSelf, check};
};

// The maps' line for the mapping that holds `at`.
std::optional<os::Mapping> mapping_holding(const void* at) {
  const auto maps = os::read_maps(kSelf);
  if (!maps) return std::nullopt;
  for (const auto& m : *maps) {
    if (m.contains(address_of(at))) return m;
  }
  return std::nullopt;
}

// A file of one page of `fill`, mapped read-only (at `at` when it is not null).
void* map_file_page(char fill, void* at) {
  char path[] = "/tmp/parastack-pages-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return MAP_FAILED;
  std::string page(kPage, fill);
  void* mapped = MAP_FAILED;
  if (::write(fd, page.data(), page.size()) == static_cast<ssize_t>(page.size())) {
    mapped = ::mmap(at, page.size(), PROT_READ, MAP_PRIVATE | (at ? MAP_FIXED_NOREPLACE : 0), fd, 0);
  }
  ::close(fd);
  ::unlink(path);
  return mapped;
}

// A library closed and another mapped at its addresses (dlclose, dlopen): a page of a file of 'a'
// is mapped, read through `own` and kept, then unmapped, and a page of another file, of 'b',
// mapped at its address `at`.
void keep_a_page_then_map_another_there(OwnMemory& own, void*& at) {
  at = map_file_page('a', nullptr);
  ASSERT_NE(at, MAP_FAILED);
  own.read_maps_again();
  char byte = 0;
  ASSERT_TRUE(own.memory.read(address_of(at), &byte, 1));
  ASSERT_EQ(byte, 'a');
  ASSERT_EQ(own.memory.kept(), 1u);
  ASSERT_EQ(::munmap(at, kPage), 0);
  ASSERT_EQ(map_file_page('b', at), at);
}

TEST(ReadOnlyMemory, ABlockOfAReadOnlyFileMappingIsReadOnceAndKept) {
  OwnMemory own;
  auto& memory = own.memory;
  char word[8] = {};
  // Two words of one block (the code's address rounded down to a block, and the word after).
  const std::uint64_t block = address_of(own_code()) & ~(ReadOnlyMemory::kBlockSize - 1);
  const auto* bytes = reinterpret_cast<const unsigned char*>(block);
  ASSERT_TRUE(memory.read(block, word, sizeof word));
  EXPECT_EQ(std::memcmp(word, bytes, sizeof word), 0);
  EXPECT_EQ(memory.kept(), 1u);
  ASSERT_TRUE(memory.read(block + 8, word, sizeof word));
  EXPECT_EQ(std::memcmp(word, bytes + 8, sizeof word), 0);
  EXPECT_EQ(memory.kept(), 1u);  // the same block
  ASSERT_TRUE(memory.read(block + ReadOnlyMemory::kBlockSize, word, sizeof word));
  EXPECT_EQ(std::memcmp(word, bytes + ReadOnlyMemory::kBlockSize, sizeof word), 0);
  EXPECT_EQ(memory.kept(), 2u);  // the next one
}

TEST(ReadOnlyMemory, WritableMemoryIsReadFromTheProcessEveryTime) {
  OwnMemory own;
  auto& memory = own.memory;
  char word[8] = {};
  ASSERT_TRUE(memory.read(address_of(changing), word, sizeof word));
  EXPECT_EQ(std::memcmp(word, "written ", sizeof word), 0);
  changing[0] = 'W';
  ASSERT_TRUE(memory.read(address_of(changing), word, sizeof word));
  EXPECT_EQ(std::memcmp(word, "Written ", sizeof word), 0);
  EXPECT_EQ(memory.kept(), 0u);
  int on_the_stack = 42, read = 0;
  ASSERT_TRUE(memory.read(address_of(&on_the_stack), &read, sizeof read));
  EXPECT_EQ(read, 42);
  EXPECT_EQ(memory.kept(), 0u);
}

TEST(ReadOnlyMemory, AFileMappedWhereAnotherWasIsReadAfreshOnceTheMapsSaySo) {
  // The new maps name another file there, and what was kept of the old one must not be served.
  OwnMemory own;
  auto& memory = own.memory;
  void* at = nullptr;
  ASSERT_NO_FATAL_FAILURE(keep_a_page_then_map_another_there(own, at));
  own.read_maps_again();
  EXPECT_EQ(memory.kept(), 0u);
  char byte = 0;
  ASSERT_TRUE(memory.read(address_of(at), &byte, 1));
  EXPECT_EQ(byte, 'b');
  // Unmapped: nothing to read, and nothing kept is served for it.
  ASSERT_EQ(::munmap(at, kPage), 0);
  own.read_maps_again();
  EXPECT_FALSE(memory.read(address_of(at), &byte, 1));
}

TEST(ReadOnlyMemory, AFileMappedWhereAnotherWasIsNeverServedFromWhatWasKept) {
  // The same, before anyone read the maps again: Open MPI closes and opens components inside
  // MPI_Init, and a sampler that first looked then must not unwind the new ones by the old ones'
  // tables. The next sample asks the mapping again (MappingCheck) and finds another file there.
  OwnMemory own;
  auto& memory = own.memory;
  void* at = nullptr;
  ASSERT_NO_FATAL_FAILURE(keep_a_page_then_map_another_there(own, at));
  own.check.begin_sample();
  char byte = 0;
  ASSERT_TRUE(memory.read(address_of(at), &byte, 1));
  EXPECT_EQ(byte, 'b');
  EXPECT_TRUE(memory.maps_changed());
  EXPECT_FALSE(memory.maps_changed());  // said once
  EXPECT_EQ(memory.kept(), 0u);
  // Once the maps are read again, the new file's blocks are kept.
  own.read_maps_again();
  ASSERT_TRUE(memory.read(address_of(at), &byte, 1));
  EXPECT_EQ(byte, 'b');
  EXPECT_EQ(memory.kept(), 1u);
  ::munmap(at, kPage);
}

TEST(MappingCheck, TellsTheSameFileAtTheSameAddressesFromAnythingElse) {
  void* at = map_file_page('a', nullptr);
  ASSERT_NE(at, MAP_FAILED);
  const auto mapped = mapping_holding(at);
  ASSERT_TRUE(mapped);
  EXPECT_TRUE(mapped->path.ends_with(" (deleted)")) << mapped->path;  // as the maps name it
  MappingCheck check(kSelf);
  EXPECT_TRUE(check.still_mapped(mapped->start, mapped->end, mapped->path));
  check.begin_sample();
  EXPECT_FALSE(check.still_mapped(mapped->start, mapped->end, "/another/file"));
  EXPECT_FALSE(check.still_mapped(mapped->start, mapped->end + kPage, mapped->path));  // not exactly it
  ASSERT_EQ(::munmap(at, kPage), 0);
  check.begin_sample();
  EXPECT_FALSE(check.still_mapped(mapped->start, mapped->end, mapped->path));
  // Within one sample a mapping is asked once; the maps just read are trusted for the sample.
  check.maps_read();
  EXPECT_TRUE(check.still_mapped(mapped->start, mapped->end, mapped->path));
  check.begin_sample();
  EXPECT_FALSE(check.still_mapped(mapped->start, mapped->end, mapped->path));
}

TEST(ReadOnlyMemory, TheSameMapsKeepWhatWasRead) {
  OwnMemory own;
  auto& memory = own.memory;
  char word[8] = {};
  ASSERT_TRUE(memory.read(address_of(own_code()), word, sizeof word));
  EXPECT_EQ(memory.kept(), 1u);
  memory.set_mappings(*os::read_maps(kSelf));
  EXPECT_EQ(memory.kept(), 1u);
}

TEST(ReadOnlyMemory, AReadAcrossTwoBlocksIsServedWhole) {
  // Two pages of one read-only file mapping: a word across the border of two blocks, and of the
  // two pages, is read from the process.
  char path[] = "/tmp/parastack-pages-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  std::string two(2 * kPage, 'x');
  std::memcpy(&two[ReadOnlyMemory::kBlockSize - 4], "abcdefgh", 8);
  std::memcpy(&two[kPage - 4], "12345678", 8);
  ASSERT_EQ(::write(fd, two.data(), two.size()), static_cast<ssize_t>(two.size()));
  void* at = ::mmap(nullptr, two.size(), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  ::unlink(path);
  ASSERT_NE(at, MAP_FAILED);
  OwnMemory own;
  auto& memory = own.memory;
  char word[8] = {};
  ASSERT_TRUE(memory.read(address_of(at) + ReadOnlyMemory::kBlockSize - 4, word, sizeof word));
  EXPECT_EQ(std::memcmp(word, "abcdefgh", sizeof word), 0);
  ASSERT_TRUE(memory.read(address_of(at) + kPage - 4, word, sizeof word));
  EXPECT_EQ(std::memcmp(word, "12345678", sizeof word), 0);
  ::munmap(at, two.size());
}

}  // namespace
}  // namespace parastack::sampler
