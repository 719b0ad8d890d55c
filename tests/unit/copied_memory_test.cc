#include "sampler/copied_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace parastack::sampler {
namespace {

constexpr std::uint64_t kStart = 0x7ffc'0000'0000;
constexpr std::size_t kSize = 4096, kWord = 8;

TEST(CopiedMemory, AWordIsReadFromTheCopyOnlyWhenAllOfItLiesInside) {
  EXPECT_TRUE(copy_holds(kStart, kWord, kStart, kSize));
  EXPECT_TRUE(copy_holds(kStart + kSize - kWord, kWord, kStart, kSize));       // the last word
  EXPECT_FALSE(copy_holds(kStart + kSize - kWord + 1, kWord, kStart, kSize));  // straddles the end
  EXPECT_FALSE(copy_holds(kStart + kSize, kWord, kStart, kSize));
  EXPECT_FALSE(copy_holds(kStart - 1, kWord, kStart, kSize));  // straddles the start
  EXPECT_FALSE(copy_holds(0, kWord, kStart, kSize));
}

TEST(CopiedMemory, AnAddressNearTheTopOfTheAddressSpaceDoesNotWrapIntoTheCopy) {
  // What a corrupt frame handed the unwinder in CI: address + 8 wraps to a small number, which
  // an `address + 8 <= start + size` check let through.
  constexpr auto kTop = std::numeric_limits<std::uint64_t>::max();
  for (std::uint64_t back = 0; back < kWord; ++back) {
    EXPECT_FALSE(copy_holds(kTop - back, kWord, kStart, kSize)) << back;
    EXPECT_FALSE(copy_holds(kTop - back, kWord, 0, kSize)) << back;
  }
  // A copy that ends at the very top is still read to its last word.
  EXPECT_TRUE(copy_holds(kTop - kWord + 1, kWord, kTop - kSize + 1, kSize));
  EXPECT_FALSE(copy_holds(kTop - kWord + 2, kWord, kTop - kSize + 1, kSize));
}

TEST(CopiedMemory, ACopyShorterThanAWordHoldsNothing) {
  // An empty vdso image (no vdso, or it could not be read): size - bytes must not wrap either.
  EXPECT_FALSE(copy_holds(kStart, kWord, kStart, 0));
  EXPECT_FALSE(copy_holds(kStart, kWord, kStart, kWord - 1));
  EXPECT_TRUE(copy_holds(kStart, kWord - 1, kStart, kWord - 1));
}

}  // namespace
}  // namespace parastack::sampler
