// RocksDbStore's repair and verify: the paths a damaged store takes.
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/store/rocksdb_layout.h"
#include "core/store/rocksdb_status.h"
#include "core/store/rocksdb_store.h"

namespace aotcache {

absl::StatusOr<RocksDbStore::RepairReport> RocksDbStore::Repair(
    const std::string& path) {
  StoreOptions options;
  options.path = path;
  auto [db_options, families] = DbOptions(options);
  rocksdb::Status st = rocksdb::RepairDB(path, db_options, families);
  if (!st.ok()) {
    if (st.IsIOError() && st.ToString().find("lock") != std::string::npos) {
      return absl::UnavailableError(
          absl::StrCat("store ", path, " is in use: stop the daemon first (",
                       st.ToString(), ")"));
    }
    return FromRocksDb(st, absl::StrCat("repairing store ", path));
  }
  {
    // The repairer keeps every column family, but a lost meta table loses
    // the schema version: written again, since every family is this
    // store's (an unknown one still fails the open below).
    rocksdb::DB* raw = nullptr;
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    st = rocksdb::DB::Open(db_options, path, families, &handles, &raw);
    AOTCACHE_RETURN_IF_ERROR(
        FromRocksDb(st, absl::StrCat("opening repaired store ", path)));
    std::string version;
    rocksdb::Status got =
        raw->Get(rocksdb::ReadOptions(), handles[5], kSchemaKey, &version);
    if (got.IsNotFound()) {
      rocksdb::WriteOptions synced;
      synced.sync = true;
      got = raw->Put(synced, handles[5], kSchemaKey,
                     absl::StrCat(kStoreSchemaVersion));
    }
    raw->Flush(rocksdb::FlushOptions(), handles).PermitUncheckedError();
    for (rocksdb::ColumnFamilyHandle* h : handles) {
      raw->DestroyColumnFamilyHandle(h);
    }
    delete raw;
    if (!got.ok()) {
      return FromRocksDb(got, "writing the repaired store's schema version");
    }
  }
  AOTCACHE_ASSIGN_OR_RETURN(std::unique_ptr<RocksDbStore> store, Open(options));
  AOTCACHE_ASSIGN_OR_RETURN(VerifyReport verified, store->Verify());
  RepairReport report;
  report.artifacts =
      verified.checked - static_cast<int64_t>(verified.corrupt.size());
  report.dropped_entries = std::move(verified.corrupt_entries);
  report.dropped_artifacts = std::move(verified.corrupt);
  // An entry whose artifacts are gone (RocksDB's repairer does not recover
  // blob files, where large artifacts live) would only be a miss: dropped
  // and named, so that what the report counts is what is served.
  std::vector<std::string> orphans;
  std::string token;
  do {
    AOTCACHE_ASSIGN_OR_RETURN(Page page, store->List(token, 1000));
    for (const v1::CacheEntry& e : page.entries) {
      bool whole = true;
      for (const std::string& d : Digests(e)) whole &= store->HasArtifact(d);
      if (whole) {
        ++report.entries;
      } else {
        orphans.push_back(e.key());
      }
    }
    token = page.next_page_token;
  } while (!token.empty());
  for (const std::string& key : orphans) {
    AOTCACHE_RETURN_IF_ERROR(store->Delete(key));
    report.dropped_entries.push_back(key);
  }
  return report;
}

absl::StatusOr<RocksDbStore::VerifyReport> RocksDbStore::Verify() {
  VerifyReport report;
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
  return report;
}

}  // namespace aotcache
