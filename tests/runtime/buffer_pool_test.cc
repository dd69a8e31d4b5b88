#include "core/runtime/buffer_pool.h"

#include <algorithm>
#include <cstdint>

#include "gtest/gtest.h"

namespace aotcache {
namespace {

constexpr size_t kLarge = BufferPool::kSmallestKept;

TEST(BufferPoolTest, AFreedLargeBufferServesTheNextRequestOfItsSize) {
  BufferPool pool(size_t{16} << 20);
  char* a = pool.Take(kLarge + 1);
  pool.GiveBack(a, kLarge + 1);
  EXPECT_EQ(pool.idle_bytes(), BufferPool::RoundedSize(kLarge + 1));
  // Another size goes to malloc; the same rounded size takes it back.
  char* other = pool.Take(2 * kLarge);
  EXPECT_NE(other, a);
  EXPECT_EQ(pool.Take(kLarge + 10), a);
  EXPECT_EQ(pool.idle_bytes(), 0u);
  pool.GiveBack(other, 2 * kLarge);
  pool.GiveBack(a, kLarge + 10);
}

TEST(BufferPoolTest, TheMostRecentlyFreedOfASizeComesBackFirst) {
  BufferPool pool(size_t{16} << 20);
  char* a = pool.Take(kLarge);
  char* b = pool.Take(kLarge);
  pool.GiveBack(a, kLarge);
  pool.GiveBack(b, kLarge);
  EXPECT_EQ(pool.Take(kLarge), b);
  EXPECT_EQ(pool.Take(kLarge), a);
  pool.GiveBack(a, kLarge);
  pool.GiveBack(b, kLarge);
}

TEST(BufferPoolTest, IdleBytesStayWithinTheBoundByFreeingTheOldest) {
  BufferPool pool(3 * kLarge);
  char* a = pool.Take(kLarge);
  char* b = pool.Take(2 * kLarge);
  char* c = pool.Take(kLarge);
  pool.GiveBack(a, kLarge);
  pool.GiveBack(b, 2 * kLarge);
  EXPECT_EQ(pool.idle_bytes(), 3 * kLarge);
  pool.GiveBack(c, kLarge);  // a, the oldest, is freed to make room.
  EXPECT_EQ(pool.idle_bytes(), 3 * kLarge);
  EXPECT_EQ(pool.Take(kLarge), c);
  EXPECT_EQ(pool.idle_bytes(), 2 * kLarge);
  EXPECT_EQ(pool.Take(2 * kLarge), b);
  pool.GiveBack(b, 2 * kLarge);
  pool.GiveBack(c, kLarge);
  // A buffer larger than the bound is never kept.
  char* huge = pool.Take(4 * kLarge);
  pool.GiveBack(huge, 4 * kLarge);
  EXPECT_EQ(pool.idle_bytes(), 3 * kLarge);
}

TEST(BufferPoolTest, SmallBuffersGoBackToMalloc) {
  BufferPool pool(size_t{16} << 20);
  char* small = pool.Take(kLarge - 64);
  pool.GiveBack(small, kLarge - 64);
  EXPECT_EQ(pool.idle_bytes(), 0u);
}

TEST(BufferPoolTest, BuffersAreAlignedAndRoundedToTheAlignment) {
  BufferPool pool(size_t{16} << 20);
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{65}, kLarge + 3}) {
    char* p = pool.Take(bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % BufferPool::kAlignment, 0u);
    EXPECT_EQ(BufferPool::RoundedSize(bytes) % BufferPool::kAlignment, 0u);
    EXPECT_GE(BufferPool::RoundedSize(bytes), std::max<size_t>(bytes, 1));
    pool.GiveBack(p, bytes);
  }
}

}  // namespace
}  // namespace aotcache
