// The store's size and its eviction, on a real RocksDB in a temp dir: the
// size kept against what was written, the hard limit, least recently used
// first, an entry used during a sweep spared, a version-1 store counted on
// open, a drifted size mended by verify, and a sweep killed with SIGKILL.
#include <sys/wait.h>

#include <csignal>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/store/evictor.h"
#include "core/store/merge_operators.h"
#include "core/store/rocksdb_store.h"
#include "core/store/store_janitor.h"
#include "gtest/gtest.h"
#include "rocksdb/db.h"
#include "tests/store/store_entries.h"
#include "tests/testing/raw_store.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::aotcache::testing::NumberedEntry;
using ::aotcache::testing::NumberedKey;
using ::aotcache::testing::TempDir;

constexpr size_t kArtifactBytes = 1000;

// What entry i takes in the store: its key and encoded entry, its artifact's
// digest and bytes (stored as they are: compression is off).
int64_t SizeOf(int i) {
  auto [entry, artifact] = NumberedEntry(i, kArtifactBytes);
  return static_cast<int64_t>(32 + entry.SerializeAsString().size() + 64 +
                              kArtifactBytes);
}

// A clock the test moves: one "second" per tick.
struct Clock {
  int64_t now = 1'000'000;
  std::function<int64_t()> fn() {
    return [this] { return now; };
  }
};

absl::StatusOr<std::unique_ptr<RocksDbStore>> Open(
    const std::string& path, std::function<int64_t()> clock = nullptr,
    int64_t hard_limit = 0) {
  StoreOptions options;
  options.path = path;
  options.compression.zstd = false;
  options.now_micros = std::move(clock);
  options.hard_limit_bytes = hard_limit;
  return RocksDbStore::Open(options);
}

void PutEntry(RocksDbStore& store, int i) {
  auto [entry, artifact] = NumberedEntry(i, kArtifactBytes);
  ASSERT_THAT(store.Put(entry, {artifact}), IsOk());
}

TEST(StoreSizeTest, TheSizeIsWhatEntriesAndArtifactsTakeAcrossReopen) {
  TempDir dir;
  int64_t expected = 0;
  {
    auto store = Open(dir.path());
    ASSERT_THAT(store, IsOk());
    for (int i = 0; i < 10; ++i) {
      PutEntry(**store, i);
      expected += SizeOf(i);
    }
    // Put again: the same entry and artifact; nothing grows.
    PutEntry(**store, 3);
    // A second entry sharing entry 4's artifact adds only itself.
    auto [shared, artifact] = NumberedEntry(4, kArtifactBytes);
    shared.set_key(NumberedKey(100));
    ASSERT_THAT((*store)->Put(shared, {artifact}), IsOk());
    expected += 32 + static_cast<int64_t>(shared.SerializeAsString().size());
    ASSERT_THAT((*store)->Delete(NumberedKey(4)), IsOk());  // Shared: kept.
    expected -= SizeOf(4) - 64 - static_cast<int64_t>(kArtifactBytes);
    ASSERT_THAT((*store)->Delete(NumberedKey(5)), IsOk());
    expected -= SizeOf(5);
    EXPECT_EQ((*store)->usage().bytes, expected);
    EXPECT_EQ((*store)->usage().entries, 9);
  }
  auto store = Open(dir.path());
  ASSERT_THAT(store, IsOk());
  EXPECT_EQ((*store)->usage().bytes, expected);
  EXPECT_EQ((*store)->usage().entries, 9);
  absl::StatusOr<RocksDbStore::VerifyReport> verified = (*store)->Verify();
  ASSERT_THAT(verified, IsOk());
  EXPECT_EQ(verified->usage_drift.bytes, 0);
  EXPECT_EQ(verified->usage_drift.entries, 0);
}

TEST(StoreSizeTest, OverTheHardLimitNothingIsStoredAndTheErrorSaysCacheFull) {
  TempDir dir;
  auto store = Open(dir.path(), nullptr, 3 * SizeOf(0) + 10);
  ASSERT_THAT(store, IsOk());
  for (int i = 0; i < 3; ++i) PutEntry(**store, i);
  auto [entry, artifact] = NumberedEntry(3, kArtifactBytes);
  absl::Status refused = (*store)->Put(entry, {artifact});
  EXPECT_TRUE(IsCacheFull(refused)) << refused;
  EXPECT_TRUE(absl::IsNotFound((*store)->Lookup(NumberedKey(3)).status()));
  EXPECT_FALSE((*store)->HasArtifact(artifact.first));
  // What shrinks the store is still written.
  ASSERT_THAT((*store)->Delete(NumberedKey(0)), IsOk());
  EXPECT_THAT((*store)->Put(entry, {artifact}), IsOk());
}

TEST(StoreSizeTest, EvictionTakesTheLeastRecentlyUsedFirst) {
  TempDir dir;
  Clock clock;
  auto store = Open(dir.path(), clock.fn());
  ASSERT_THAT(store, IsOk());
  for (int i = 0; i < 20; ++i) {
    ++clock.now;
    PutEntry(**store, i);
  }
  // Entries 0 and 1, the oldest stored, were used last.
  ++clock.now;
  ASSERT_THAT((*store)->RecordHit(NumberedKey(0)), IsOk());
  ASSERT_THAT((*store)->RecordHit(NumberedKey(1)), IsOk());
  ++clock.now;
  int64_t ten = 0;
  for (int i = 0; i < 10; ++i) ten += SizeOf(i);
  EvictionGoal goal;
  goal.to_bytes = ten;
  absl::StatusOr<EvictionReport> report = Evict(**store, goal);
  ASSERT_THAT(report, IsOk());
  EXPECT_LE((*store)->usage().bytes, ten);
  EXPECT_EQ(report->entries, 10);
  // Left: the ten used last -- 0, 1 and 12..19.
  for (int i = 0; i < 20; ++i) {
    const bool kept = i < 2 || i >= 12;
    EXPECT_EQ((*store)->Lookup(NumberedKey(i)).ok(), kept) << i;
  }
  EXPECT_EQ((*store)->usage().entries, 10);
}

TEST(StoreSizeTest, EvictionByAgeTakesWhatWasNotUsedSince) {
  TempDir dir;
  Clock clock;
  auto store = Open(dir.path(), clock.fn());
  ASSERT_THAT(store, IsOk());
  for (int i = 0; i < 6; ++i) {
    clock.now += 10;
    PutEntry(**store, i);
  }
  clock.now += 10;
  ASSERT_THAT((*store)->RecordHit(NumberedKey(0)), IsOk());  // Pending hit.
  EvictionGoal goal;
  goal.used_before_micros = clock.now - 35;  // Entries 0..2 were older.
  absl::StatusOr<EvictionReport> report = Evict(**store, goal);
  ASSERT_THAT(report, IsOk());
  EXPECT_EQ(report->entries, 2);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ((*store)->Lookup(NumberedKey(i)).ok(), i == 0 || i >= 3) << i;
  }
}

TEST(StoreSizeTest, AnEntryUsedAfterTheSweepBeganIsSpared) {
  TempDir dir;
  Clock clock;
  auto store = Open(dir.path(), clock.fn());
  ASSERT_THAT(store, IsOk());
  PutEntry(**store, 0);
  clock.now += 10;
  const int64_t sweep_began = clock.now;
  ASSERT_THAT((*store)->RecordHit(NumberedKey(0)), IsOk());
  absl::Duration held;
  using Eviction = RocksDbStore::Eviction;
  absl::StatusOr<Eviction> evicted =
      (*store)->EvictIfIdle(NumberedKey(0), sweep_began, &held);
  ASSERT_THAT(evicted, IsOk());
  EXPECT_EQ(*evicted, Eviction::kSpared);
  EXPECT_THAT((*store)->Lookup(NumberedKey(0)), IsOk());
  evicted = (*store)->EvictIfIdle(NumberedKey(0), sweep_began + 1, &held);
  ASSERT_THAT(evicted, IsOk());
  EXPECT_EQ(*evicted, Eviction::kEvicted);
  // The entry and its artifact went together.
  EXPECT_EQ((*store)->usage().bytes, 0);
  EXPECT_FALSE(
      (*store)->HasArtifact(NumberedEntry(0, kArtifactBytes).second.first));
}

TEST(StoreSizeTest, TheJanitorKeepsTheStoreUnderItsSoftLimit) {
  TempDir dir;
  auto store = Open(dir.path());
  ASSERT_THAT(store, IsOk());
  SizeLimits limits;
  limits.max_bytes = 20 * SizeOf(0);
  limits.interval = absl::Milliseconds(10);
  StoreJanitor janitor(store->get(), limits);
  for (int i = 0; i < 30; ++i) PutEntry(**store, i);
  EXPECT_TRUE(testing::WaitUntil(
      [&] { return (*store)->usage().bytes <= limits.max_bytes * 0.9; },
      absl::Seconds(30)));
  EXPECT_GE(janitor.counters().sweeps, 1);
  EXPECT_GE(janitor.counters().entries, 12);
  // The newest survive.
  EXPECT_THAT((*store)->Lookup(NumberedKey(29)), IsOk());
}

// Version 1 kept no size: the first open counts it, gives every entry an
// access record, and makes the store version 2.
TEST(StoreSizeTest, AVersionOneStoreIsCountedOnceOnOpen) {
  TempDir dir;
  {
    auto store = Open(dir.path());
    ASSERT_THAT(store, IsOk());
    for (int i = 0; i < 5; ++i) PutEntry(**store, i);
  }
  testing::EditRawStore(dir.path(), [](rocksdb::DB* db, const std::string& cf,
                                       rocksdb::ColumnFamilyHandle* h) {
    if (cf == "meta") {
      ASSERT_THAT(db->Put(rocksdb::WriteOptions(), h, "schema_version", "1"),
                  IsOk());
      ASSERT_THAT(db->Delete(rocksdb::WriteOptions(), h, "usage_bytes"),
                  IsOk());
      ASSERT_THAT(db->Delete(rocksdb::WriteOptions(), h, "usage_entries"),
                  IsOk());
    }
    if (cf == "access") {
      for (int i = 0; i < 5; ++i) {
        ASSERT_THAT(db->Delete(rocksdb::WriteOptions(), h, NumberedKey(i)),
                    IsOk());
      }
    }
    if (cf == "artifact_sizes") {  // Not in version 1.
      for (int i = 0; i < 5; ++i) {
        ASSERT_THAT(db->Delete(rocksdb::WriteOptions(), h,
                               NumberedEntry(i, kArtifactBytes).second.first),
                    IsOk());
      }
    }
  });
  int64_t expected = 0;
  for (int i = 0; i < 5; ++i) expected += SizeOf(i);
  {
    auto store = Open(dir.path());
    ASSERT_THAT(store, IsOk());
    EXPECT_EQ((*store)->usage().bytes, expected);
    EXPECT_EQ((*store)->usage().entries, 5);
    EXPECT_TRUE(
        (*store)->HasArtifact(NumberedEntry(3, kArtifactBytes).second.first));
    // Every entry has an access record: an eviction can find it.
    EvictionGoal goal;
    goal.to_bytes = 0;
    absl::StatusOr<EvictionReport> report = Evict(**store, goal);
    ASSERT_THAT(report, IsOk());
    EXPECT_EQ(report->entries, 5);
  }
  std::string version;
  testing::EditRawStore(dir.path(), [&](rocksdb::DB* db, const std::string& cf,
                                        rocksdb::ColumnFamilyHandle* h) {
    if (cf == "meta") {
      ASSERT_THAT(
          db->Get(rocksdb::ReadOptions(), h, "schema_version", &version),
          IsOk());
    }
  });
  EXPECT_EQ(version, absl::StrCat(kStoreSchemaVersion));
}

TEST(StoreSizeTest, VerifyMendsASizeThatDrifted) {
  TempDir dir;
  {
    auto store = Open(dir.path());
    ASSERT_THAT(store, IsOk());
    for (int i = 0; i < 4; ++i) PutEntry(**store, i);
  }
  testing::EditRawStore(dir.path(), [](rocksdb::DB* db, const std::string& cf,
                                       rocksdb::ColumnFamilyHandle* h) {
    if (cf == "meta") {
      ASSERT_THAT(db->Merge(rocksdb::WriteOptions(), h, "usage_bytes",
                            EncodeCount(-12345)),
                  IsOk());
    }
  });
  auto store = Open(dir.path());
  ASSERT_THAT(store, IsOk());
  absl::StatusOr<RocksDbStore::VerifyReport> verified = (*store)->Verify();
  ASSERT_THAT(verified, IsOk());
  EXPECT_EQ(verified->usage_drift.bytes, 12345);
  int64_t expected = 0;
  for (int i = 0; i < 4; ++i) expected += SizeOf(i);
  EXPECT_EQ((*store)->usage().bytes, expected);
}

// HasArtifact reads an artifact's size record, not its bytes: verify mends
// one that is missing or left without its artifact.
TEST(StoreSizeTest, VerifyMendsArtifactSizeRecords) {
  TempDir dir;
  {
    auto store = Open(dir.path());
    ASSERT_THAT(store, IsOk());
    for (int i = 0; i < 3; ++i) PutEntry(**store, i);
  }
  const std::string lost = NumberedEntry(0, kArtifactBytes).second.first;
  const std::string orphan = NumberedEntry(1, kArtifactBytes).second.first;
  testing::EditRawStore(dir.path(), [&](rocksdb::DB* db, const std::string& cf,
                                        rocksdb::ColumnFamilyHandle* h) {
    if (cf == "artifact_sizes") {
      ASSERT_THAT(db->Delete(rocksdb::WriteOptions(), h, lost), IsOk());
    }
    if (cf == "artifacts") {
      ASSERT_THAT(db->Delete(rocksdb::WriteOptions(), h, orphan), IsOk());
    }
  });
  auto store = Open(dir.path());
  ASSERT_THAT(store, IsOk());
  EXPECT_FALSE((*store)->HasArtifact(lost));
  EXPECT_TRUE((*store)->HasArtifact(orphan));  // What verify is for.
  ASSERT_THAT((*store)->Verify(), IsOk());
  EXPECT_TRUE((*store)->HasArtifact(lost));
  EXPECT_FALSE((*store)->HasArtifact(orphan));
}

// A sweep killed with SIGKILL halfway: every entry it would not choose is
// there and whole, those it took are gone whole, and the size agrees.
TEST(StoreSizeTest, ASweepKilledHalfwayLosesNothingItDidNotChoose) {
  TempDir dir;
  // Enough that the sweep is far from done when its process sees a quarter
  // of it done (at 400 it sometimes finished first, on a loaded machine).
  constexpr int kEntries = 4000;
  Clock clock;
  int64_t all = 0, newer_half = 0;
  {
    auto store = Open(dir.path(), clock.fn());
    ASSERT_THAT(store, IsOk());
    for (int i = 0; i < kEntries; ++i) {
      ++clock.now;  // Entry i was used i-th.
      PutEntry(**store, i);
      all += SizeOf(i);
      if (i >= kEntries / 2) newer_half += SizeOf(i);
    }
  }
  const std::string command =
      absl::StrCat(AOTCACHE_CRASHING_WRITER, " ", dir.path(), " evict ",
                   newer_half, " ", all - (all - newer_half) / 4);
  const int status = std::system(command.c_str());
  const bool killed = (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ||
                      (WIFEXITED(status) && WEXITSTATUS(status) == 128 + 9);
  ASSERT_TRUE(killed) << command << " ended with " << status;

  auto store = Open(dir.path());
  ASSERT_THAT(store, IsOk());
  int kept = 0;
  for (int i = 0; i < kEntries; ++i) {
    absl::StatusOr<v1::CacheEntry> e = (*store)->Lookup(NumberedKey(i));
    if (i >= kEntries / 2) ASSERT_THAT(e, IsOk()) << "entry " << i;
    if (!e.ok()) continue;
    ++kept;
    EXPECT_THAT((*store)->GetArtifact(e->forward_digest()), IsOk()) << i;
  }
  EXPECT_GT(kept, kEntries / 2);  // Killed before the sweep ended.
  EXPECT_LT(kept, kEntries);
  EXPECT_EQ((*store)->usage().entries, kept);
  absl::StatusOr<RocksDbStore::VerifyReport> verified = (*store)->Verify();
  ASSERT_THAT(verified, IsOk());
  EXPECT_EQ(verified->usage_drift.bytes, 0);
  EXPECT_EQ(verified->usage_drift.entries, 0);
  EXPECT_TRUE(verified->corrupt.empty());
}

}  // namespace
}  // namespace aotcache
