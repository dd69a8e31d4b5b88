// RocksDbStore's repair and verify: the paths a damaged store takes.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/key/digest.h"
#include "core/status_macros.h"
#include "core/store/blob_file_reader.h"
#include "core/store/rocksdb_layout.h"
#include "core/store/rocksdb_status.h"
#include "core/store/rocksdb_store.h"

namespace aotcache {

namespace {

using Families = std::vector<rocksdb::ColumnFamilyDescriptor>;

bool IsLockError(const rocksdb::Status& st) {
  return st.IsIOError() && st.ToString().find("lock") != std::string::npos;
}

absl::Status InUse(const std::string& path, const rocksdb::Status& st) {
  return absl::UnavailableError(
      absl::StrCat("store ", path, " is in use: stop the daemon first (",
                   st.ToString(), ")"));
}

// Opens the store with `options` (never creating one), flushes every family
// (the log's writes into table files) and closes it.
rocksdb::Status OpenAndFlush(const std::string& path, rocksdb::Options options,
                             const Families& families) {
  options.create_if_missing = false;
  rocksdb::DB* raw = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::Status st =
      rocksdb::DB::Open(options, path, families, &handles, &raw);
  if (!st.ok()) return st;
  st = raw->Flush(rocksdb::FlushOptions(), handles);
  for (rocksdb::ColumnFamilyHandle* h : handles) {
    raw->DestroyColumnFamilyHandle(h);
  }
  rocksdb::Status closed = raw->Close();
  delete raw;
  return st.ok() ? closed : st;
}

// Step 1: the store as it is, its log replayed as strictly as it can be.
rocksdb::Status OpenAsItIs(const std::string& path,
                           const rocksdb::Options& options,
                           const Families& families,
                           RocksDbStore::RepairReport* report) {
  using Mode = rocksdb::WALRecoveryMode;
  const std::pair<Mode, const char*> modes[] = {
      {Mode::kAbsoluteConsistency, "its write-ahead log replayed whole"},
      {Mode::kTolerateCorruptedTailRecords,
       "its write-ahead log replayed, its damaged tail dropped (the entries "
       "written in it are lost and cannot be named)"},
      {Mode::kSkipAnyCorruptedRecords,
       "its write-ahead log replayed, its damaged records skipped (the "
       "entries written in them are lost and cannot be named)"}};
  rocksdb::Status st;
  for (const auto& [mode, said] : modes) {
    rocksdb::Options o = options;
    o.wal_recovery_mode = mode;
    st = OpenAndFlush(path, o, families);
    if (st.ok()) {
      report->steps.push_back(said);
      report->lost_unnamed = mode != Mode::kAbsoluteConsistency;
    }
    if (st.ok() || IsLockError(st)) return st;
  }
  return st;
}

// Step 2: CURRENT (kept in lost/ if there was one) pointed at each
// MANIFEST, newest first.
rocksdb::Status OpenWithEachManifest(const std::string& path,
                                     const rocksdb::Options& options,
                                     const Families& families,
                                     RocksDbStore::RepairReport* report) {
  std::vector<std::string> manifests;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(path, ec)) {
    std::string name = f.path().filename().string();
    if (absl::StartsWith(name, "MANIFEST-")) manifests.push_back(name);
  }
  // MANIFEST-<number>, zero-padded: newest last in name order.
  std::sort(manifests.rbegin(), manifests.rend());
  const std::string current = path + "/CURRENT";
  if (std::filesystem::exists(current, ec)) {
    std::filesystem::create_directories(path + "/lost", ec);
    std::filesystem::rename(current, path + "/lost/CURRENT", ec);
  }
  rocksdb::Status st = rocksdb::Status::NotFound("no MANIFEST file");
  for (const std::string& manifest : manifests) {
    {
      std::ofstream out(current, std::ios::trunc);
      out << manifest << "\n";
    }
    st = OpenAsItIs(path, options, families, report);
    if (st.ok()) {
      report->steps.insert(report->steps.end() - 1,
                           absl::StrCat("CURRENT pointed at ", manifest));
    }
    if (st.ok() || IsLockError(st)) return st;
  }
  return st;
}

// Every artifact the blob files of `path` hold, checked against its digest:
// RocksDB's repairer does not recover blob files.
std::vector<std::pair<std::string, std::string>> ArtifactsOfBlobFiles(
    const std::string& path) {
  std::vector<std::pair<std::string, std::string>> artifacts;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(path, ec)) {
    if (f.path().extension() != ".blob") continue;
    for (auto& [digest, bytes] : ReadBlobRecords(f.path().string())) {
      if (DecodeArtifact(bytes, digest).has_value()) {  // Kept as stored.
        artifacts.emplace_back(std::move(digest), std::move(bytes));
      }
    }
  }
  return artifacts;
}

// Step 3: RocksDB's repairer, then the schema version (a lost meta table
// loses it; every family is this store's, and an unknown one still fails
// the open after) and the artifacts of `salvaged` that an entry references
// and the repaired store lacks.
absl::Status RepairWithRocksDb(
    const std::string& path, const rocksdb::Options& options,
    const Families& families,
    const std::vector<std::pair<std::string, std::string>>& salvaged,
    std::vector<std::string>* steps) {
  rocksdb::Status st = rocksdb::RepairDB(path, options, families);
  if (IsLockError(st)) return InUse(path, st);
  AOTCACHE_RETURN_IF_ERROR(
      FromRocksDb(st, absl::StrCat("repairing store ", path)));
  steps->push_back(
      "RocksDB's repairer rebuilt the MANIFEST from the table files");
  rocksdb::DB* raw = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  st = rocksdb::DB::Open(options, path, families, &handles, &raw);
  AOTCACHE_RETURN_IF_ERROR(
      FromRocksDb(st, absl::StrCat("opening repaired store ", path)));
  rocksdb::WriteOptions synced;
  synced.sync = true;
  std::string value;
  rocksdb::Status wrote =
      raw->Get(rocksdb::ReadOptions(), handles[5], kSchemaKey, &value);
  if (wrote.IsNotFound()) {
    wrote = raw->Put(synced, handles[5], kSchemaKey,
                     absl::StrCat(kStoreSchemaVersion));
  }
  int restored = 0;
  for (const auto& [digest, bytes] : salvaged) {
    if (!wrote.ok()) break;
    const bool referenced =
        raw->Get(rocksdb::ReadOptions(), handles[3], digest, &value).ok();
    if (!referenced ||
        raw->Get(rocksdb::ReadOptions(), handles[2], digest, &value).ok()) {
      continue;
    }
    wrote = raw->Put(synced, handles[2], digest, bytes);
    restored += wrote.ok();
  }
  if (wrote.ok()) wrote = raw->Flush(rocksdb::FlushOptions(), handles);
  for (rocksdb::ColumnFamilyHandle* h : handles) {
    raw->DestroyColumnFamilyHandle(h);
  }
  delete raw;
  if (restored > 0) {
    steps->push_back(
        absl::StrCat(restored, " artifacts read back from blob files"));
  }
  return FromRocksDb(wrote, "writing the repaired store");
}

}  // namespace

absl::Status RocksDbStore::CheckRepaired(const std::string& path,
                                         RepairReport* report) {
  StoreOptions options;
  options.path = path;
  AOTCACHE_ASSIGN_OR_RETURN(std::unique_ptr<RocksDbStore> store, Open(options));
  AOTCACHE_ASSIGN_OR_RETURN(VerifyReport verified, store->Verify());
  report->artifacts =
      verified.checked - static_cast<int64_t>(verified.corrupt.size());
  report->entries = 0;
  report->dropped_entries = std::move(verified.corrupt_entries);
  report->dropped_artifacts = std::move(verified.corrupt);
  // An entry whose artifacts are gone would only be a miss: dropped and
  // named, so that what the report counts is what is served.
  std::vector<std::string> orphans;
  std::string token;
  do {
    AOTCACHE_ASSIGN_OR_RETURN(Page page, store->List(token, 1000));
    for (const v1::CacheEntry& e : page.entries) {
      bool whole = true;
      for (const std::string& d : Digests(e)) whole &= store->HasArtifact(d);
      if (whole) {
        ++report->entries;
      } else {
        orphans.push_back(e.key());
      }
    }
    token = page.next_page_token;
  } while (!token.empty());
  for (const std::string& key : orphans) {
    AOTCACHE_RETURN_IF_ERROR(store->Delete(key));
    report->dropped_entries.push_back(key);
  }
  return absl::OkStatus();
}

absl::StatusOr<RocksDbStore::RepairReport> RocksDbStore::Repair(
    const std::string& path) {
  StoreOptions options;
  options.path = path;
  auto [db_options, families] = DbOptions(options);
  RepairReport report;
  rocksdb::Status opened = OpenAsItIs(path, db_options, families, &report);
  if (!opened.ok() && !IsLockError(opened)) {
    opened = OpenWithEachManifest(path, db_options, families, &report);
  }
  if (IsLockError(opened)) return InUse(path, opened);
  if (opened.ok()) {
    absl::Status checked = CheckRepaired(path, &report);
    if (checked.ok() || absl::IsUnavailable(checked)) {
      if (!checked.ok()) return checked;
      return report;
    }
    report.steps.push_back(
        absl::StrCat("it opened but did not verify: ", checked.message()));
  }
  const auto salvaged = ArtifactsOfBlobFiles(path);
  AOTCACHE_RETURN_IF_ERROR(
      RepairWithRocksDb(path, db_options, families, salvaged, &report.steps));
  AOTCACHE_RETURN_IF_ERROR(CheckRepaired(path, &report));
  return report;
}

absl::StatusOr<RocksDbStore::VerifyReport> RocksDbStore::Verify() {
  VerifyReport report;
  report.recovery_damage = recovery_damage_;
  // Entries first: small values, read in order; one that does not parse or
  // is not its key's is dropped. Damage RocksDB detects in this family stops
  // the scan: only a repair gets past it.
  std::vector<std::string> bad_keys;
  {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions(), entries_));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      ++report.checked_entries;
      v1::CacheEntry entry;
      if (!entry.ParseFromArray(it->value().data(),
                                static_cast<int>(it->value().size())) ||
          entry.key() != it->key().ToStringView()) {
        bad_keys.push_back(it->key().ToString());
      }
    }
    absl::Status st = FromRocksDb(it->status(), "verifying entries");
    if (!st.ok()) {
      return absl::Status(
          st.code(),
          absl::StrCat(st.message(), RepairHint(options_.path, it->status())));
    }
  }
  for (const std::string& key : bad_keys) {
    AOTCACHE_RETURN_IF_ERROR(Delete(key));
    report.corrupt_entries.push_back(key);
  }
  // Artifacts one by one, by the digests the reference counts name, so that
  // one unreadable blob is named and dropped instead of ending the scan.
  std::vector<std::string> digests;
  {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions(), refcounts_));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      digests.push_back(it->key().ToString());
    }
    AOTCACHE_RETURN_IF_ERROR(FromRocksDb(it->status(), "verifying artifacts"));
  }
  for (const std::string& d : digests) {
    absl::StatusOr<std::string> bytes = GetArtifact(d);
    if (absl::IsNotFound(bytes.status())) continue;
    ++report.checked;
    if (absl::IsDataLoss(bytes.status())) {
      report.corrupt.push_back(d);  // GetArtifact dropped it.
    } else if (!bytes.ok()) {
      return bytes.status();
    }
  }
  if (read_only_) return report;  // Its size cannot be mended.
  AOTCACHE_ASSIGN_OR_RETURN(report.usage_drift, RecountUsage());
  return report;
}

}  // namespace aotcache
