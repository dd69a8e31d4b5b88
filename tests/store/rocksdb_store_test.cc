// RocksDbStore on a real RocksDB in a temp dir: persistence, schema checks,
// digest checks, shared artifacts under concurrent writes, access times,
// paging.
#include "core/store/rocksdb_store.h"

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/key/digest.h"
#include "gtest/gtest.h"
#include "rocksdb/db.h"
#include "tests/testing/raw_store.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::aotcache::testing::TempDir;

std::unique_ptr<RocksDbStore> OpenOrDie(
    const std::string& path, std::function<int64_t()> clock = nullptr) {
  StoreOptions options;
  options.path = path;
  options.now_micros = std::move(clock);
  absl::StatusOr<std::unique_ptr<RocksDbStore>> store =
      RocksDbStore::Open(options);
  EXPECT_THAT(store, IsOk());
  return store.ok() ? *std::move(store) : nullptr;
}

std::string Key(int i) {
  std::string key(32, '\0');
  key[0] = static_cast<char>(i >> 8);
  key[1] = static_cast<char>(i & 255);
  return key;
}

v1::CacheEntry Entry(const std::string& key,
                     const std::string& forward_digest) {
  v1::CacheEntry e;
  e.set_key(key);
  e.set_mode(v1::MODE_INFERENCE);
  e.set_forward_digest(forward_digest);
  return e;
}

std::pair<std::string, std::string> Artifact(const std::string& bytes) {
  return {Sha256Hex(bytes), bytes};
}

TEST(RocksDbStoreTest, EntriesAndArtifactsPersistAcrossReopen) {
  TempDir dir;
  auto art = Artifact("forward artifact bytes");
  {
    auto store = OpenOrDie(dir.path());
    ASSERT_THAT(store->Put(Entry(Key(1), art.first), {art}), IsOk());
  }
  auto store = OpenOrDie(dir.path());
  absl::StatusOr<v1::CacheEntry> e = store->Lookup(Key(1));
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(e->forward_digest(), art.first);
  absl::StatusOr<std::string> bytes = store->GetArtifact(art.first);
  ASSERT_THAT(bytes, IsOk());
  EXPECT_EQ(*bytes, art.second);
  EXPECT_TRUE(absl::IsNotFound(store->Lookup(Key(2)).status()));
}

TEST(RocksDbStoreTest, SecondOpenOfTheSameStoreFailsAtOnce) {
  TempDir dir;
  auto first = OpenOrDie(dir.path());
  StoreOptions options;
  options.path = dir.path();
  absl::StatusOr<std::unique_ptr<RocksDbStore>> second =
      RocksDbStore::Open(options);
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(absl::IsUnavailable(second.status())) << second.status();
  EXPECT_NE(std::string(second.status().message()).find("in use"),
            std::string::npos);
}

TEST(RocksDbStoreTest, OtherSchemaVersionIsRefusedNotWiped) {
  TempDir dir;
  auto art = Artifact("x");
  { OpenOrDie(dir.path())->Put(Entry(Key(1), art.first), {art}).IgnoreError(); }
  testing::EditRawStore(dir.path(), [](rocksdb::DB* db, const std::string& name,
                                       rocksdb::ColumnFamilyHandle* cf) {
    if (name == "meta")
      db->Put(rocksdb::WriteOptions(), cf, "schema_version", "99");
  });
  StoreOptions options;
  options.path = dir.path();
  auto store = RocksDbStore::Open(options);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(store.status())) << store.status();
  EXPECT_NE(std::string(store.status().message()).find("schema version 99"),
            std::string::npos);
}

TEST(RocksDbStoreTest, UnknownColumnFamilyIsRefused) {
  TempDir dir;
  { OpenOrDie(dir.path()); }
  testing::EditRawStore(dir.path(), [](rocksdb::DB* db, const std::string& name,
                                       rocksdb::ColumnFamilyHandle*) {
    if (name != "meta") return;
    rocksdb::ColumnFamilyHandle* extra = nullptr;
    ASSERT_TRUE(db->CreateColumnFamily(rocksdb::ColumnFamilyOptions(),
                                       "strange", &extra)
                    .ok());
    db->DestroyColumnFamilyHandle(extra);
  });
  StoreOptions options;
  options.path = dir.path();
  auto store = RocksDbStore::Open(options);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(std::string(store.status().message()).find("'strange'"),
            std::string::npos);
}

TEST(RocksDbStoreTest, CorruptArtifactIsNeverServedAndVerifyRepairs) {
  TempDir dir;
  auto a = Artifact("artifact a");
  auto b = Artifact("artifact b");
  {
    auto store = OpenOrDie(dir.path());
    ASSERT_THAT(store->Put(Entry(Key(1), a.first), {a}), IsOk());
    ASSERT_THAT(store->Put(Entry(Key(2), b.first), {b}), IsOk());
  }
  testing::EditRawStore(
      dir.path(), [&](rocksdb::DB* db, const std::string& name,
                      rocksdb::ColumnFamilyHandle* cf) {
        if (name != "artifacts") return;
        db->Put(rocksdb::WriteOptions(), cf, a.first, "tampered");
        db->Put(rocksdb::WriteOptions(), cf, b.first, "tampered too");
      });
  auto store = OpenOrDie(dir.path());
  EXPECT_THAT(store->Lookup(Key(1)), IsOk());
  absl::StatusOr<std::string> read = store->GetArtifact(a.first);
  EXPECT_TRUE(absl::IsDataLoss(read.status())) << read.status();
  EXPECT_TRUE(
      absl::IsNotFound(store->GetArtifact(a.first).status()));  // Dropped.
  absl::StatusOr<RocksDbStore::VerifyReport> report = store->Verify();
  ASSERT_THAT(report, IsOk());
  EXPECT_EQ(report->corrupt, std::vector<std::string>{b.first});
  EXPECT_FALSE(store->HasArtifact(b.first));
}

TEST(RocksDbStoreTest, SharedArtifactLivesUntilItsLastEntryGoes) {
  TempDir dir;
  auto store = OpenOrDie(dir.path());
  auto art = Artifact("shared");
  ASSERT_THAT(store->Put(Entry(Key(1), art.first), {art}), IsOk());
  ASSERT_TRUE(
      store->Put(Entry(Key(2), art.first), {}).ok());  // Already stored.
  EXPECT_EQ(*store->ReferenceCount(art.first), 2);
  ASSERT_THAT(store->Delete(Key(1)), IsOk());
  EXPECT_TRUE(store->HasArtifact(art.first));
  ASSERT_THAT(store->Delete(Key(2)), IsOk());
  EXPECT_FALSE(store->HasArtifact(art.first));
  EXPECT_EQ(*store->ReferenceCount(art.first), 0);
  EXPECT_TRUE(absl::IsNotFound(store->Delete(Key(2))));
}

TEST(RocksDbStoreTest, ReplacingAnEntryReleasesItsOldArtifacts) {
  TempDir dir;
  auto store = OpenOrDie(dir.path());
  auto old_art = Artifact("old");
  auto new_art = Artifact("new");
  ASSERT_THAT(store->Put(Entry(Key(1), old_art.first), {old_art}), IsOk());
  v1::CacheEntry with_backward = Entry(Key(1), old_art.first);
  with_backward.set_backward_digest(new_art.first);
  ASSERT_THAT(store->Put(with_backward, {new_art}), IsOk());
  EXPECT_EQ(*store->ReferenceCount(old_art.first), 1);
  ASSERT_THAT(store->Put(Entry(Key(1), new_art.first), {}), IsOk());
  EXPECT_FALSE(store->HasArtifact(old_art.first));
  EXPECT_TRUE(store->HasArtifact(new_art.first));
}

TEST(RocksDbStoreTest, EntryReferencingAMissingArtifactIsRefused) {
  TempDir dir;
  auto store = OpenOrDie(dir.path());
  absl::Status st = store->Put(Entry(Key(1), Sha256Hex("never stored")), {});
  EXPECT_TRUE(absl::IsFailedPrecondition(st)) << st;
  EXPECT_TRUE(absl::IsNotFound(store->Lookup(Key(1)).status()));
}

TEST(RocksDbStoreTest, ConcurrentPutsAndDeletesNeverLoseASharedArtifact) {
  TempDir dir;
  auto store = OpenOrDie(dir.path());
  auto art = Artifact("shared by every entry");
  constexpr int kThreads = 4, kRounds = 300;
  std::atomic<int> lost{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        std::string key = Key(t * 1000 + r % 7);
        // Half of the puts pass the bytes, half rely on them being stored.
        bool with_bytes = (r + t) % 2 == 0;
        absl::Status put = store->Put(
            Entry(key, art.first),
            with_bytes ? std::vector{art}
                       : std::vector<std::pair<std::string, std::string>>{});
        if (put.ok()) {
          // While this entry exists, its artifact must be readable.
          if (!store->GetArtifact(art.first).ok()) ++lost;
        } else if (!absl::IsFailedPrecondition(put)) {
          ++lost;
        }
        if (r % 3 == 0) store->Delete(key).IgnoreError();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(lost.load(), 0);
  // Whatever entries remain reference an artifact that is there; the count
  // equals the number of entries.
  absl::StatusOr<RocksDbStore::Page> page = store->List("", 10000);
  ASSERT_THAT(page, IsOk());
  EXPECT_EQ(*store->ReferenceCount(art.first),
            static_cast<int64_t>(page->entries.size()));
  EXPECT_EQ(store->HasArtifact(art.first), !page->entries.empty());
}

TEST(RocksDbStoreTest, HitsAndLastAccessWithoutReadModifyWrite) {
  TempDir dir;
  int64_t now = 1000;
  auto store = OpenOrDie(dir.path(), [&] { return now; });
  ASSERT_THAT(store->RecordHit(Key(1)), IsOk());
  now = 5000;
  ASSERT_THAT(store->RecordHit(Key(1)), IsOk());
  absl::StatusOr<RocksDbStore::Access> access = store->GetAccess(Key(1));
  ASSERT_THAT(access, IsOk());
  EXPECT_EQ(access->hits, 2u);
  EXPECT_EQ(access->last_access_micros, 5000);
}

TEST(RocksDbStoreTest, HitsBatchedInMemorySurviveAClose) {
  TempDir dir;
  int64_t now = 10'000'000;
  auto art = Artifact("a");
  {
    auto store = OpenOrDie(dir.path(), [&] { return now; });
    ASSERT_THAT(store->Put(Entry(Key(1), art.first), {art}), IsOk());
    ASSERT_THAT(store->Put(Entry(Key(2), art.first), {art}), IsOk());
    for (int i = 0; i < 3; ++i) ASSERT_THAT(store->RecordHit(Key(1)), IsOk());
    now += 2'000'000;  // Past the batch's second: written with this one.
    ASSERT_THAT(store->RecordHit(Key(2)), IsOk());
    ASSERT_THAT(store->RecordHit(Key(1)), IsOk());  // Pending at close.
    EXPECT_EQ(store->GetAccess(Key(1))->hits, 4u);
  }
  auto store = OpenOrDie(dir.path());
  EXPECT_EQ(store->GetAccess(Key(1))->hits, 4u);
  EXPECT_EQ(store->GetAccess(Key(1))->last_access_micros, now);
  EXPECT_EQ(store->GetAccess(Key(2))->hits, 1u);
}

TEST(RocksDbStoreTest, DeletingAnEntryDropsItsPendingHits) {
  TempDir dir;
  auto store = OpenOrDie(dir.path());
  auto art = Artifact("a");
  ASSERT_THAT(store->Put(Entry(Key(1), art.first), {art}), IsOk());
  ASSERT_THAT(store->RecordHit(Key(1)), IsOk());
  ASSERT_THAT(store->RecordHit(Key(1)), IsOk());
  ASSERT_THAT(store->Delete(Key(1)), IsOk());
  EXPECT_EQ(store->GetAccess(Key(1))->hits, 0u);
  ASSERT_THAT(store->Put(Entry(Key(1), art.first), {art}), IsOk());
  EXPECT_EQ(store->GetAccess(Key(1))->hits, 0u);
}

TEST(RocksDbStoreTest, ListingPagesThroughEveryEntryOnce) {
  TempDir dir;
  auto store = OpenOrDie(dir.path());
  auto art = Artifact("a");
  for (int i = 0; i < 25; ++i)
    ASSERT_THAT(store->Put(Entry(Key(i), art.first), {art}), IsOk());
  std::set<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    absl::StatusOr<RocksDbStore::Page> page = store->List(token, 10);
    ASSERT_THAT(page, IsOk());
    for (const auto& e : page->entries)
      EXPECT_TRUE(seen.insert(e.key()).second);
    token = page->next_page_token;
    ++pages;
  } while (!token.empty());
  EXPECT_EQ(seen.size(), 25u);
  EXPECT_EQ(pages, 3);
  EXPECT_TRUE(absl::IsInvalidArgument(store->List("", 0).status()));
}

TEST(RocksDbStoreTest, EveryDurabilityOpens) {
  for (Durability d :
       {Durability::kWalNoSync, Durability::kSync, Durability::kNoWal}) {
    TempDir dir;
    StoreOptions options;
    options.path = dir.path();
    options.durability = d;
    auto store = RocksDbStore::Open(options);
    ASSERT_THAT(store, IsOk());
    auto art = Artifact("d");
    EXPECT_THAT((*store)->Put(Entry(Key(1), art.first), {art}), IsOk());
  }
}

}  // namespace
}  // namespace aotcache
