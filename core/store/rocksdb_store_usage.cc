// RocksDbStore's size and eviction: the size kept in meta, its recount, and
// the delete an eviction makes.
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/store/merge_operators.h"
#include "core/store/rocksdb_layout.h"
#include "core/store/rocksdb_status.h"
#include "core/store/rocksdb_store.h"

namespace aotcache {
namespace {

// A snapshot of `db`, released on destruction.
class Snapshot {
 public:
  explicit Snapshot(rocksdb::DB* db) : db_(db), snapshot_(db->GetSnapshot()) {
    options_.snapshot = snapshot_;
  }
  ~Snapshot() { db_->ReleaseSnapshot(snapshot_); }
  const rocksdb::ReadOptions& options() const { return options_; }

 private:
  rocksdb::DB* db_;
  const rocksdb::Snapshot* snapshot_;
  rocksdb::ReadOptions options_;
};

absl::StatusOr<int64_t> ReadCount(rocksdb::DB* db,
                                  const rocksdb::ReadOptions& options,
                                  rocksdb::ColumnFamilyHandle* family,
                                  absl::string_view key) {
  std::string value;
  rocksdb::Status st = db->Get(options, family, ToSlice(key), &value);
  if (st.IsNotFound()) return 0;
  AOTCACHE_RETURN_IF_ERROR(FromRocksDb(st, "reading the store's size"));
  return DecodeCount(value);
}

}  // namespace

absl::StatusOr<std::string> RocksDbStore::ReadRawEntry(
    absl::string_view key) const {
  std::string value;
  rocksdb::Status st =
      db_->Get(rocksdb::ReadOptions(), entries_, ToSlice(key), &value);
  if (st.IsNotFound()) return absl::NotFoundError("no entry for this key");
  AOTCACHE_RETURN_IF_ERROR(FromRocksDb(st, "reading an entry"));
  return value;
}

absl::Status RocksDbStore::LoadUsage() {
  AOTCACHE_ASSIGN_OR_RETURN(
      int64_t bytes,
      ReadCount(db_.get(), rocksdb::ReadOptions(), meta_, kUsageBytesKey));
  AOTCACHE_ASSIGN_OR_RETURN(
      int64_t entries,
      ReadCount(db_.get(), rocksdb::ReadOptions(), meta_, kUsageEntriesKey));
  usage_bytes_ = bytes;
  usage_entries_ = entries;
  return absl::OkStatus();
}

absl::StatusOr<RocksDbStore::Usage> RocksDbStore::RecountUsage() {
  // The size kept and the records are read at one snapshot: every write
  // changes both in one batch, so their difference there is the drift, and
  // merging it corrects the size without losing the writes made since.
  Snapshot snapshot(db_.get());
  Usage counted;
  rocksdb::WriteBatch batch;
  std::vector<std::string> disagree;  // Digests whose size record is off.
  {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(snapshot.options(), entries_));
    std::string access;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      counted.bytes += StoredSize(ToView(it->key()), ToView(it->value()));
      ++counted.entries;
      rocksdb::Status st =
          db_->Get(snapshot.options(), access_, it->key(), &access);
      if (!st.IsNotFound()) continue;
      // Stored before access records were written with every entry.
      v1::CacheEntryHeader header;
      header.ParseFromArray(it->value().data(),
                            static_cast<int>(it->value().size()));
      batch.Merge(access_, it->key(), EncodeAccess(0, header.created_micros()));
    }
    AOTCACHE_RETURN_IF_ERROR(FromRocksDb(it->status(), "counting entries"));
  }
  {
    // Artifacts and their size records side by side (both in digest
    // order): those that disagree are mended below, live.
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(snapshot.options(), artifacts_));
    std::unique_ptr<rocksdb::Iterator> size(
        db_->NewIterator(snapshot.options(), artifact_sizes_));
    size->SeekToFirst();
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      counted.bytes += StoredSize(ToView(it->key()), ToView(it->value()));
      for (; size->Valid() && size->key().compare(it->key()) < 0;
           size->Next()) {
        disagree.push_back(size->key().ToString());
      }
      const bool recorded = size->Valid() && size->key() == it->key();
      if (!recorded || DecodeCount(ToView(size->value())) !=
                           static_cast<int64_t>(it->value().size())) {
        disagree.push_back(it->key().ToString());
      }
      if (recorded) size->Next();
    }
    for (; size->Valid(); size->Next()) {
      disagree.push_back(size->key().ToString());
    }
    AOTCACHE_RETURN_IF_ERROR(FromRocksDb(it->status(), "counting artifacts"));
    AOTCACHE_RETURN_IF_ERROR(
        FromRocksDb(size->status(), "reading artifact sizes"));
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int64_t kept_bytes,
      ReadCount(db_.get(), snapshot.options(), meta_, kUsageBytesKey));
  AOTCACHE_ASSIGN_OR_RETURN(
      int64_t kept_entries,
      ReadCount(db_.get(), snapshot.options(), meta_, kUsageEntriesKey));
  const Usage drift{counted.bytes - kept_bytes, counted.entries - kept_entries};
  if (drift.bytes != 0 || drift.entries != 0 || batch.Count() > 0) {
    AOTCACHE_RETURN_IF_ERROR(
        Write(WriteOptions(), batch, "correcting the store's size", drift));
  }
  for (const std::string& digest : disagree) {
    AOTCACHE_RETURN_IF_ERROR(MendArtifactSize(digest));
  }
  return drift;
}

absl::StatusOr<RocksDbStore::Eviction> RocksDbStore::EvictIfIdle(
    absl::string_view key, int64_t used_since_micros,
    absl::Duration* lock_held) {
  absl::MutexLock key_lock(&KeyLock(key));
  const auto locked = std::chrono::steady_clock::now();
  struct HoldTimer {
    std::chrono::steady_clock::time_point since;
    absl::Duration* out;
    ~HoldTimer() {
      *out = absl::FromChrono(std::chrono::steady_clock::now() - since);
    }
  } timer{locked, lock_held};
  AOTCACHE_ASSIGN_OR_RETURN(Access access, GetAccess(key));
  if (access.last_access_micros >= used_since_micros) return Eviction::kSpared;
  absl::StatusOr<std::string> value = ReadRawEntry(key);
  if (absl::IsNotFound(value.status())) {
    rocksdb::WriteBatch batch;
    batch.Delete(access_, ToSlice(key));
    AOTCACHE_RETURN_IF_ERROR(
        Write(WriteOptions(), batch, "removing an access record"));
    return Eviction::kSpared;
  }
  AOTCACHE_RETURN_IF_ERROR(value.status());
  rocksdb::WriteOptions no_stall = WriteOptions();
  no_stall.no_slowdown = true;
  absl::Status deleted = DeleteLocked(key, *value, no_stall);
  if (absl::IsUnavailable(deleted)) return Eviction::kBusy;
  AOTCACHE_RETURN_IF_ERROR(deleted);
  return Eviction::kEvicted;
}

}  // namespace aotcache
