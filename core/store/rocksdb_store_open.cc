// RocksDbStore's open: the column families checked, a damaged log said,
// a store on a full disk opened read-only, the schema version checked (a
// version-1 store counted and moved to version 2).
#include <chrono>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/store/rocksdb_layout.h"
#include "core/store/rocksdb_status.h"
#include "core/store/rocksdb_store.h"

namespace aotcache {

namespace {

// Synced whatever the durability.
absl::Status WriteSchemaVersion(rocksdb::DB* db,
                                rocksdb::ColumnFamilyHandle* meta) {
  rocksdb::WriteOptions synced;
  synced.sync = true;
  return FromRocksDb(
      db->Put(synced, meta, kSchemaKey, absl::StrCat(kStoreSchemaVersion)),
      "writing the schema version");
}

}  // namespace

absl::StatusOr<std::unique_ptr<RocksDbStore>> RocksDbStore::Open(
    StoreOptions options) {
  std::unique_ptr<RocksDbStore> store(new RocksDbStore());
  if (!options.now_micros) {
    options.now_micros = [] {
      return std::chrono::duration_cast<std::chrono::microseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
  }
  store->options_ = options;

  auto [db_options, families] = DbOptions(options);
  std::vector<std::string> existing;
  rocksdb::Status listed =
      rocksdb::DB::ListColumnFamilies(db_options, options.path, &existing);
  bool fresh = !listed.ok();  // No database there yet.
  if (fresh && HasStoreFiles(options.path)) {
    // A store whose CURRENT file is gone: RocksDB would start a new one over
    // it and every entry would be lost.
    rocksdb::Status missing = rocksdb::Status::Corruption(
        "its table, log or MANIFEST files are there but not its CURRENT file");
    return absl::DataLossError(absl::StrCat("store ", options.path, ": ",
                                            missing.ToString(),
                                            RepairHint(options.path, missing)));
  }
  std::set<std::string> known = {rocksdb::kDefaultColumnFamilyName,
                                 kEntries,
                                 kArtifacts,
                                 kRefcounts,
                                 kAccess,
                                 kMeta,
                                 kArtifactSizes};
  for (const std::string& name : existing) {
    if (!known.count(name)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "store ", options.path, ": unknown column family '", name,
          "' (written by another program or a newer aotcache?)"));
    }
  }
  rocksdb::DB* db = nullptr;
  rocksdb::Status st;
  const int64_t free = FreeBytes(options.path);
  if (!fresh && free >= 0 && free < options.min_free_bytes) {
    // An open writes (a new WAL, a MANIFEST, a flush of the old WAL): on a
    // full disk RocksDB would abort. Read-only, the hits are still served.
    AOTCACHE_ASSIGN_OR_RETURN(store->lock_fd_, LockStore(options.path));
    store->read_only_ = true;
    absl::MutexLock lock(&store->writes_mu_);
    store->writes_stopped_ =
        absl::StrCat("opened read-only: the disk is full (", free,
                     " bytes free under ", options.path, ")");
    st = rocksdb::DB::OpenForReadOnly(db_options, options.path, families,
                                      &store->handles_, &db);
  } else {
    // Strictly first: a log that ends in a damaged record opens only with
    // its tail dropped, and that is said (RocksDB drops it without a word).
    rocksdb::Options strict = db_options;
    strict.wal_recovery_mode = rocksdb::WALRecoveryMode::kAbsoluteConsistency;
    st = rocksdb::DB::Open(strict, options.path, families, &store->handles_,
                           &db);
    if (st.IsCorruption()) {
      const std::string damage = st.ToString();
      st = rocksdb::DB::Open(db_options, options.path, families,
                             &store->handles_, &db);
      if (st.ok()) {
        store->recovery_damage_ = absl::StrCat(
            "the write-ahead log ended in a damaged or incomplete record (",
            damage,
            "); the writes in and after it were dropped. A crash during a "
            "write leaves one (that write was never acknowledged); a machine "
            "crash or a damaged disk may have lost acknowledged entries");
      }
    }
  }
  if (!st.ok()) {
    if (st.IsIOError() && st.ToString().find("lock") != std::string::npos) {
      return absl::UnavailableError(
          absl::StrCat("store ", options.path,
                       " is in use by another process: ", st.ToString()));
    }
    absl::Status opened =
        FromRocksDb(st, absl::StrCat("opening store ", options.path));
    return absl::Status(
        opened.code(),
        absl::StrCat(opened.message(), RepairHint(options.path, st)));
  }
  store->db_.reset(db);
  store->entries_ = store->handles_[1];
  store->artifacts_ = store->handles_[2];
  store->refcounts_ = store->handles_[3];
  store->access_ = store->handles_[4];
  store->meta_ = store->handles_[5];
  store->artifact_sizes_ = store->handles_[6];

  std::string version;
  st = db->Get(rocksdb::ReadOptions(), store->meta_, kSchemaKey, &version);
  if (st.IsNotFound() && store->read_only_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "store ", options.path, " has no schema version and the disk is full"));
  } else if (st.IsNotFound()) {
    if (!fresh && !existing.empty()) {
      // An existing store without a version is not ours.
      bool has_entries = false;
      std::unique_ptr<rocksdb::Iterator> it(
          db->NewIterator(rocksdb::ReadOptions(), store->entries_));
      it->SeekToFirst();
      has_entries = it->Valid();
      if (has_entries) {
        return absl::FailedPreconditionError(absl::StrCat(
            "store ", options.path, " has entries but no schema version"));
      }
    }
    // Flushed too: a store whose version was lost would never open again.
    AOTCACHE_RETURN_IF_ERROR(WriteSchemaVersion(db, store->meta_));
    AOTCACHE_RETURN_IF_ERROR(
        FromRocksDb(db->Flush(rocksdb::FlushOptions(), store->handles_),
                    "flushing the schema version"));
  } else if (!st.ok()) {
    return FromRocksDb(st, "reading the schema version");
  } else {
    int v = 0;
    const bool known_version =
        absl::SimpleAtoi(version, &v) && (v == 1 || v == kStoreSchemaVersion);
    if (!known_version) {
      return absl::FailedPreconditionError(absl::StrCat(
          "store ", options.path, " has schema version ", version,
          "; this aotcache reads version ", kStoreSchemaVersion,
          ". Use a new data dir (the old one is left untouched)."));
    }
    if (v == 1 && !store->read_only_) {
      // Version 1 kept no size: counted once, then the store is version 2
      // (which a version-1 aotcache refuses, as it would not keep the size).
      AOTCACHE_RETURN_IF_ERROR(store->RecountUsage().status());
      AOTCACHE_RETURN_IF_ERROR(WriteSchemaVersion(db, store->meta_));
    }
  }
  AOTCACHE_RETURN_IF_ERROR(store->LoadUsage());
  return store;
}

}  // namespace aotcache
