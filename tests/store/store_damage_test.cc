// A damaged or crashed store never loses acknowledged entries silently: it
// refuses to open and says how to repair, or it drops exactly what it names.
// Crashes are real (a child process that writes and dies without closing);
// damage is bytes flipped or files removed in a closed store.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/store/rocksdb_store.h"
#include "gtest/gtest.h"
#include "tests/store/store_entries.h"
#include "tests/testing/raw_store.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::aotcache::testing::TempDir;

std::string Key(int i) { return testing::NumberedKey(i); }

void PutEntry(RocksDbStore& store, int i) {
  auto [entry, artifact] = testing::NumberedEntry(i, 100);
  ASSERT_THAT(store.Put(entry, {artifact}), IsOk());
}

absl::StatusOr<std::unique_ptr<RocksDbStore>> Open(
    const std::string& path, Durability durability = Durability::kWalNoSync) {
  StoreOptions options;
  options.path = path;
  options.durability = durability;
  return RocksDbStore::Open(options);
}

// Writes entries [0, n) in a child process that then dies as kill -9 would
// leave it: nothing closed, nothing flushed by the store.
void WriteAndDie(const std::string& path, int n, const char* durability,
                 size_t artifact_bytes = 100) {
  std::string command = absl::StrCat(AOTCACHE_CRASHING_WRITER, " ", path, " ",
                                     n, " ", durability, " ", artifact_bytes);
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

std::vector<std::string> FilesEndingIn(const std::string& dir,
                                       const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    if (absl::EndsWith(f.path().string(), suffix)) out.push_back(f.path());
  }
  return out;
}

void FlipByteAt(const std::string& file, double fraction) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(0, std::ios::end);
  const std::streamoff at = static_cast<std::streamoff>(f.tellg() * fraction);
  f.seekg(at);
  char c;
  f.get(c);
  f.seekp(at);
  f.put(static_cast<char>(c ^ 0x5a));
}

int CountEntries(RocksDbStore& store) {
  absl::StatusOr<RocksDbStore::Page> page = store.List("", 1000000);
  EXPECT_THAT(page, IsOk());
  return page.ok() ? static_cast<int>(page->entries.size()) : -1;
}

TEST(StoreDamageTest, AKilledWriterLosesNothingAcknowledged) {
  TempDir dir;
  WriteAndDie(dir.path(), 50, "wal");
  auto store = Open(dir.path());
  ASSERT_THAT(store, IsOk());
  EXPECT_EQ(CountEntries(**store), 50);
}

TEST(StoreDamageTest, ACleanCloseLeavesNothingOnlyInTheLog) {
  TempDir dir;
  {
    auto store = Open(dir.path());
    ASSERT_THAT(store, IsOk());
    for (int i = 0; i < 20; ++i) PutEntry(**store, i);
  }
  for (const std::string& wal : FilesEndingIn(dir.path(), ".log")) {
    std::filesystem::remove(wal);
  }
  auto store = Open(dir.path());
  ASSERT_THAT(store, IsOk());
  EXPECT_EQ(CountEntries(**store), 20);
}

// RocksDB's default recovery replays the log up to the damage and drops the
// rest without a word (12 of 50 entries were left, verify clean).
TEST(StoreDamageTest, ADamagedLogRefusesToOpenAndRepairSaysWhatWasLost) {
  TempDir dir;
  WriteAndDie(dir.path(), 50, "wal");
  std::vector<std::string> wals = FilesEndingIn(dir.path(), ".log");
  ASSERT_FALSE(wals.empty());
  for (const std::string& wal : wals) FlipByteAt(wal, 0.3);

  auto refused = Open(dir.path());
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "aotcache repair"))
      << refused.status();

  absl::StatusOr<RocksDbStore::RepairReport> report =
      RocksDbStore::Repair(dir.path());
  ASSERT_THAT(report, IsOk());
  auto store = Open(dir.path());
  ASSERT_THAT(store, IsOk());
  // What survived is what the report says, and all of it is served.
  EXPECT_EQ(CountEntries(**store), report->entries);
  EXPECT_LE(report->entries, 50);
  for (int i = 0; i < 50; ++i) {
    absl::StatusOr<v1::CacheEntry> e = (*store)->Lookup(Key(i));
    if (!e.ok()) continue;
    EXPECT_THAT((*store)->GetArtifact(e->forward_digest()), IsOk());
  }
}

TEST(StoreDamageTest, AMissingCurrentFileIsRepaired) {
  TempDir dir;
  {
    auto store = Open(dir.path());
    ASSERT_THAT(store, IsOk());
    for (int i = 0; i < 10; ++i) PutEntry(**store, i);
  }
  std::filesystem::remove(dir.path() + "/CURRENT");
  EXPECT_FALSE(Open(dir.path()).ok());
  absl::StatusOr<RocksDbStore::RepairReport> report =
      RocksDbStore::Repair(dir.path());
  ASSERT_THAT(report, IsOk());
  EXPECT_EQ(report->entries, 10);
  auto store = Open(dir.path());
  ASSERT_THAT(store, IsOk());
  EXPECT_EQ(CountEntries(**store), 10);
}

// After kill -9 the recent entries live only in the log; the daemon would
// open them all. A repair must too (it once reported 0 entries, exit 0, and
// moved the log away).
TEST(StoreDamageTest, RepairReplaysTheLogFirst) {
  TempDir dir;
  WriteAndDie(dir.path(), 50, "wal");
  ASSERT_FALSE(FilesEndingIn(dir.path(), ".log").empty());
  absl::StatusOr<RocksDbStore::RepairReport> report =
      RocksDbStore::Repair(dir.path());
  ASSERT_THAT(report, IsOk());
  EXPECT_EQ(report->entries, 50);
  EXPECT_TRUE(report->dropped_entries.empty());
  auto store = Open(dir.path());
  ASSERT_THAT(store, IsOk());
  EXPECT_EQ(CountEntries(**store), 50);
}

// Artifacts over 4 KiB live in blob files, which RocksDB's repairer does not
// recover: repairing a missing CURRENT once cost 40 of 50 entries.
TEST(StoreDamageTest, RepairOfAMissingCurrentKeepsArtifactsInBlobFiles) {
  for (bool killed : {false, true}) {
    TempDir dir;
    if (killed) {
      WriteAndDie(dir.path(), 50, "wal", 8192);
    } else {
      auto store = Open(dir.path());
      ASSERT_THAT(store, IsOk());
      for (int i = 0; i < 50; ++i) {
        auto [entry, artifact] = testing::NumberedEntry(i, 8192);
        ASSERT_THAT((*store)->Put(entry, {artifact}), IsOk());
      }
    }
    std::filesystem::remove(dir.path() + "/CURRENT");
    absl::StatusOr<RocksDbStore::RepairReport> report =
        RocksDbStore::Repair(dir.path());
    ASSERT_THAT(report, IsOk());
    EXPECT_EQ(report->entries, 50) << (killed ? "killed" : "closed");
    EXPECT_TRUE(report->dropped_entries.empty());
    auto store = Open(dir.path());
    ASSERT_THAT(store, IsOk());
    for (int i = 0; i < 50; ++i) {
      absl::StatusOr<v1::CacheEntry> e = (*store)->Lookup(Key(i));
      ASSERT_THAT(e, IsOk());
      EXPECT_THAT((*store)->GetArtifact(e->forward_digest()), IsOk());
    }
  }
}

// With every MANIFEST damaged only RocksDB's repairer opens the store; the
// artifacts it leaves behind in blob files are read back, each checked
// against its digest.
TEST(StoreDamageTest, RepairsADamagedManifestWithTheArtifactsOfBlobFiles) {
  TempDir dir;
  {
    auto store = Open(dir.path());
    ASSERT_THAT(store, IsOk());
    for (int i = 0; i < 20; ++i) {
      auto [entry, artifact] = testing::NumberedEntry(i, 8192);
      if (i % 2 == 1) {
        // Half of them compressible: zstd frames in the blob files.
        artifact.second += std::string(40000, 'z');
        artifact.first = Sha256Hex(artifact.second);
        entry.set_forward_digest(artifact.first);
      }
      ASSERT_THAT((*store)->Put(entry, {artifact}), IsOk());
    }
    EXPECT_LT((*store)->compression().stored_bytes,
              (*store)->compression().artifact_bytes);
  }
  ASSERT_FALSE(FilesEndingIn(dir.path(), ".blob").empty());
  for (const auto& f : std::filesystem::directory_iterator(dir.path())) {
    if (absl::StrContains(f.path().filename().string(), "MANIFEST-")) {
      std::filesystem::resize_file(f.path(), 10);
    }
  }
  EXPECT_FALSE(Open(dir.path()).ok());
  absl::StatusOr<RocksDbStore::RepairReport> report =
      RocksDbStore::Repair(dir.path());
  ASSERT_THAT(report, IsOk());
  EXPECT_EQ(report->entries, 20);
  EXPECT_TRUE(report->dropped_entries.empty());
  EXPECT_TRUE(absl::StrContains(absl::StrJoin(report->steps, "; "),
                                "20 artifacts read back from blob files"))
      << absl::StrJoin(report->steps, "; ");
  auto store = Open(dir.path());
  ASSERT_THAT(store, IsOk());
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<v1::CacheEntry> e = (*store)->Lookup(Key(i));
    ASSERT_THAT(e, IsOk());
    EXPECT_THAT((*store)->GetArtifact(e->forward_digest()), IsOk());
  }
}

// A log cut short opened without a word: 20 of 50 acknowledged entries,
// verify clean. It opens (a crash of the machine leaves such a tail), and
// says so: in the store's damage report, which stats and verify carry.
TEST(StoreDamageTest, ALogCutShortIsReportedNotSilentlyAccepted) {
  TempDir dir;
  WriteAndDie(dir.path(), 50, "wal");
  std::vector<std::string> wals = FilesEndingIn(dir.path(), ".log");
  ASSERT_EQ(wals.size(), 1u);
  std::filesystem::resize_file(wals[0],
                               std::filesystem::file_size(wals[0]) / 2 + 7);
  auto store = Open(dir.path());
  ASSERT_THAT(store, IsOk());
  EXPECT_LT(CountEntries(**store), 50);
  EXPECT_TRUE(absl::StrContains((*store)->recovery_damage(), "log"))
      << (*store)->recovery_damage();
  absl::StatusOr<RocksDbStore::VerifyReport> verified = (*store)->Verify();
  ASSERT_THAT(verified, IsOk());
  EXPECT_EQ(verified->recovery_damage, (*store)->recovery_damage());
  // An undamaged store reports nothing.
  TempDir clean;
  WriteAndDie(clean.path(), 50, "wal");
  auto fine = Open(clean.path());
  ASSERT_THAT(fine, IsOk());
  EXPECT_EQ((*fine)->recovery_damage(), "");
  EXPECT_EQ(CountEntries(**fine), 50);
}

TEST(StoreDamageTest, RepairRefusesAStoreInUse) {
  TempDir dir;
  auto store = Open(dir.path());
  ASSERT_THAT(store, IsOk());
  absl::StatusOr<RocksDbStore::RepairReport> report =
      RocksDbStore::Repair(dir.path());
  EXPECT_TRUE(absl::IsUnavailable(report.status())) << report.status();
}

// Without a WAL a crash may lose recent writes, but never the store: once
// a memtable of entries was flushed, the schema version (in its own column
// family) must be on disk too, and every entry that survived has its
// artifact.
TEST(StoreDamageTest, WithoutALogACrashedStoreStillOpens) {
  TempDir dir;
  // 96 entries of 1 MiB artifacts: past one 64 MiB memtable.
  WriteAndDie(dir.path(), 96, "none", size_t{1} << 20);
  auto store = Open(dir.path(), Durability::kNoWal);
  ASSERT_THAT(store, IsOk());
  for (int i = 0; i < 96; ++i) {
    absl::StatusOr<v1::CacheEntry> e = (*store)->Lookup(Key(i));
    if (!e.ok()) continue;
    EXPECT_THAT((*store)->GetArtifact(e->forward_digest()), IsOk());
  }
}

// One entry that does not parse (or sits under a key not its own) must not
// break the others: ls leaves it out and counts it, rm deletes it, a lookup
// never serves it, verify drops it and names it.
TEST(StoreDamageTest, AnUnreadableEntryIsNamedAndDroppedNotServed) {
  TempDir dir;
  {
    auto store = Open(dir.path());
    ASSERT_THAT(store, IsOk());
    for (int i = 0; i < 4; ++i) PutEntry(**store, i);
  }
  std::string copied;
  testing::EditRawStore(dir.path(), [&](rocksdb::DB* db,
                                        const std::string& name,
                                        rocksdb::ColumnFamilyHandle* cf) {
    if (name != "entries") return;
    db->Put(rocksdb::WriteOptions(), cf, Key(1), "\xff\xff not an entry");
    ASSERT_THAT(db->Get(rocksdb::ReadOptions(), cf, Key(2), &copied), IsOk());
    db->Put(rocksdb::WriteOptions(), cf, Key(3), copied);  // 2's, at 3.
  });
  auto store = Open(dir.path());
  ASSERT_THAT(store, IsOk());
  EXPECT_TRUE(absl::IsDataLoss((*store)->Lookup(Key(1)).status()));
  EXPECT_TRUE(absl::IsDataLoss((*store)->Lookup(Key(3)).status()));
  EXPECT_TRUE(absl::IsDataLoss((*store)->LookupHeader(Key(3)).status()));
  absl::StatusOr<RocksDbStore::Page> page = (*store)->List("", 100);
  ASSERT_THAT(page, IsOk());
  EXPECT_EQ(page->entries.size(), 2u);
  EXPECT_EQ(page->unreadable, 2);

  EXPECT_THAT((*store)->Delete(Key(1)), IsOk());
  absl::StatusOr<RocksDbStore::VerifyReport> report = (*store)->Verify();
  ASSERT_THAT(report, IsOk());
  EXPECT_EQ(report->checked_entries, 3);
  EXPECT_EQ(report->corrupt_entries, std::vector<std::string>{Key(3)});
  EXPECT_EQ(CountEntries(**store), 2);
  EXPECT_THAT((*store)->Lookup(Key(2)), IsOk());
}

}  // namespace
}  // namespace aotcache
