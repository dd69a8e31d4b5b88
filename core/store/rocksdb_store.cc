#include "core/store/rocksdb_store.h"

#include <unistd.h>

#include <algorithm>
#include <set>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/store/merge_operators.h"
#include "core/store/rocksdb_layout.h"
#include "core/store/rocksdb_status.h"
#include "rocksdb/write_batch.h"

namespace aotcache {

class RocksDbStore::DigestLocks {
 public:
  DigestLocks(RocksDbStore* store, const std::vector<std::string>& digests) {
    std::set<size_t> stripes;
    for (const std::string& d : digests)
      stripes.insert(absl::Hash<std::string>()(d) % kStripes);
    for (size_t s : stripes) {
      store->digest_locks_[s].Lock();
      held_.push_back(&store->digest_locks_[s]);
    }
  }
  ~DigestLocks() {
    for (auto it = held_.rbegin(); it != held_.rend(); ++it) (*it)->Unlock();
  }

 private:
  std::vector<absl::Mutex*> held_;
};

RocksDbStore::~RocksDbStore() {
  if (db_ == nullptr) return;
  {
    absl::MutexLock lock(&hits_mu_);
    WriteHits(pending_hits_).IgnoreError();  // Bookkeeping only.
  }
  if (read_only_) {
    for (rocksdb::ColumnFamilyHandle* h : handles_)
      db_->DestroyColumnFamilyHandle(h);
    db_.reset();
    close(lock_fd_);
    return;
  }
  // A clean close leaves nothing only in the WAL (and, without a WAL,
  // nothing only in memory). A failure here is what a crash would be.
  if (WriteProblem().empty()) {
    db_->Flush(rocksdb::FlushOptions(), handles_).PermitUncheckedError();
  }
  for (rocksdb::ColumnFamilyHandle* h : handles_)
    db_->DestroyColumnFamilyHandle(h);
  db_.reset();
}

rocksdb::WriteOptions RocksDbStore::WriteOptions() const {
  rocksdb::WriteOptions w;
  w.sync = options_.durability == Durability::kSync;
  w.disableWAL = options_.durability == Durability::kNoWal;
  return w;
}

absl::Status RocksDbStore::Write(const rocksdb::WriteOptions& options,
                                 rocksdb::WriteBatch& batch,
                                 absl::string_view what, Usage grows) {
  {
    absl::MutexLock lock(&writes_mu_);
    if (!writes_stopped_.empty()) {
      return absl::ResourceExhaustedError(
          absl::StrCat(what, ": not written (", writes_stopped_, ")"));
    }
  }
  const int64_t needed =
      options_.min_free_bytes + static_cast<int64_t>(batch.GetDataSize());
  const int64_t free = FreeBytes(options_.path);
  if (free >= 0 && free < needed) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, ": not written: the disk is full (", free, " bytes free under ",
        options_.path, ", ", needed, " needed)"));
  }
  if (grows.bytes != 0) {
    batch.Merge(meta_, kUsageBytesKey, EncodeCount(grows.bytes));
  }
  if (grows.entries != 0) {
    batch.Merge(meta_, kUsageEntriesKey, EncodeCount(grows.entries));
  }
  rocksdb::Status st = db_->Write(options, &batch);
  if (st.ok()) {
    usage_bytes_ += grows.bytes;
    usage_entries_ += grows.entries;
  }
  if (st.IsIOError() || st.IsNoSpace()) {
    // RocksDB aborts on the next write after a failed WAL write (Debian's
    // build asserts): no more writes until a restart.
    absl::MutexLock lock(&writes_mu_);
    writes_stopped_ = absl::StrCat("writes stopped after: ", st.ToString());
  }
  return FromRocksDb(st, what);
}

std::string RocksDbStore::WriteProblem() const {
  absl::MutexLock lock(&writes_mu_);
  if (!writes_stopped_.empty()) return writes_stopped_;
  const int64_t free = FreeBytes(options_.path);
  if (free >= 0 && free < options_.min_free_bytes) {
    return absl::StrCat("the disk is full (", free, " bytes free under ",
                        options_.path, ")");
  }
  return "";
}

absl::Mutex& RocksDbStore::KeyLock(absl::string_view key) {
  return key_locks_[absl::Hash<absl::string_view>()(key) % kStripes];
}

template <typename Message>
absl::StatusOr<Message> RocksDbStore::ReadEntry(absl::string_view key) const {
  rocksdb::PinnableSlice bytes;
  rocksdb::Status st =
      db_->Get(rocksdb::ReadOptions(), entries_, ToSlice(key), &bytes);
  if (st.IsNotFound()) return absl::NotFoundError("no entry for this key");
  AOTCACHE_RETURN_IF_ERROR(FromRocksDb(st, "reading an entry"));
  Message entry;
  if (!entry.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError("a stored entry does not parse");
  }
  // An entry belongs to the key it was written under: one copied or
  // damaged into another key is never served.
  if (entry.key() != key) {
    return absl::DataLossError("a stored entry is not the entry of its key");
  }
  return entry;
}

absl::StatusOr<v1::CacheEntry> RocksDbStore::Lookup(
    absl::string_view key) const {
  return ReadEntry<v1::CacheEntry>(key);
}

absl::StatusOr<v1::CacheEntryHeader> RocksDbStore::LookupHeader(
    absl::string_view key) const {
  return ReadEntry<v1::CacheEntryHeader>(key);
}

absl::Status RocksDbStore::Put(
    const v1::CacheEntry& entry,
    const std::vector<std::pair<std::string, std::string>>& artifacts) {
  const std::string& key = entry.key();
  absl::MutexLock key_lock(&KeyLock(key));
  const std::string value = entry.SerializeAsString();
  Usage grows{StoredSize(key, value), 1};
  std::vector<std::string> old_digests;
  absl::StatusOr<std::string> old_value = ReadRawEntry(key);
  if (old_value.ok()) {
    v1::CacheEntry old;
    if (!old.ParseFromString(*old_value) || old.key() != key) {
      return absl::DataLossError("the stored entry of this key is damaged");
    }
    old_digests = Digests(old);
    grows.bytes -= StoredSize(key, *old_value);
    grows.entries = 0;
  } else if (!absl::IsNotFound(old_value.status())) {
    return old_value.status();
  }
  std::vector<std::string> new_digests = Digests(entry);
  std::vector<std::string> all = old_digests;
  all.insert(all.end(), new_digests.begin(), new_digests.end());
  DigestLocks digest_locks(this, all);

  rocksdb::WriteBatch batch;
  std::set<std::string> written;
  CompressionCounters written_bytes;
  for (const std::string& d : new_digests) {
    auto given = std::find_if(artifacts.begin(), artifacts.end(),
                              [&](const auto& a) { return a.first == d; });
    const bool stored_before = written.count(d) > 0 || HasArtifact(d);
    if (given != artifacts.end() && !stored_before) {
      std::string stored = EncodeArtifact(given->second, options_.compression);
      written_bytes.artifact_bytes +=
          static_cast<int64_t>(given->second.size());
      written_bytes.stored_bytes += static_cast<int64_t>(stored.size());
      grows.bytes += StoredSize(d, stored);
      batch.Put(artifact_sizes_, d,
                EncodeCount(static_cast<int64_t>(stored.size())));
      batch.Put(artifacts_, d, stored);
      written.insert(d);
    } else if (!stored_before) {
      return absl::FailedPreconditionError(absl::StrCat(
          "entry references artifact ", d, ", which is not stored"));
    }
    batch.Merge(refcounts_, d, EncodeCount(1));
  }
  const int64_t limit = options_.hard_limit_bytes;
  if (limit > 0 && grows.bytes > 0 && usage_bytes_ + grows.bytes > limit) {
    return CacheFullError(absl::StrCat("the store holds ", usage_bytes_.load(),
                                       " bytes; its hard limit is ", limit));
  }
  for (const std::string& d : old_digests)
    batch.Merge(refcounts_, d, EncodeCount(-1));
  batch.Put(entries_, ToSlice(key), value);
  // Stored counts as used: a new entry is the last an eviction takes.
  batch.Merge(access_, ToSlice(key), EncodeAccess(0, options_.now_micros()));
  AOTCACHE_RETURN_IF_ERROR(
      Write(WriteOptions(), batch, "writing an entry", grows));
  artifact_bytes_written_ += written_bytes.artifact_bytes;
  artifact_bytes_stored_ += written_bytes.stored_bytes;
  return Sweep(old_digests);
}

absl::Status RocksDbStore::Delete(absl::string_view key) {
  absl::MutexLock key_lock(&KeyLock(key));
  AOTCACHE_ASSIGN_OR_RETURN(std::string value, ReadRawEntry(key));
  return DeleteLocked(key, value, WriteOptions());
}

absl::Status RocksDbStore::DeleteLocked(absl::string_view key,
                                        const std::string& value,
                                        const rocksdb::WriteOptions& options) {
  std::map<std::string, int64_t> released;  // Digest: references dropped.
  v1::CacheEntry entry;
  if (entry.ParseFromString(value) && entry.key() == key) {
    for (const std::string& d : Digests(entry)) ++released[d];
  }
  std::vector<std::string> digests;
  for (const auto& [d, n] : released) digests.push_back(d);
  DigestLocks digest_locks(this, digests);
  rocksdb::WriteBatch batch;
  batch.Delete(entries_, ToSlice(key));
  batch.Delete(access_, ToSlice(key));
  Usage grows{-StoredSize(key, value), -1};
  // An artifact whose last references these are goes in the same write.
  for (const auto& [d, n] : released) {
    AOTCACHE_ASSIGN_OR_RETURN(int64_t count, ReferenceCount(d));
    if (count > n) {
      batch.Merge(refcounts_, d, EncodeCount(-n));
      continue;
    }
    AOTCACHE_ASSIGN_OR_RETURN(int64_t size, ArtifactSize(d));
    grows.bytes -= size;
    batch.Delete(artifacts_, d);
    batch.Delete(artifact_sizes_, d);
    batch.Delete(refcounts_, d);
  }
  AOTCACHE_RETURN_IF_ERROR(Write(options, batch, "deleting an entry", grows));
  absl::MutexLock lock(&hits_mu_);
  pending_hits_.erase(key);
  return absl::OkStatus();
}

absl::Status RocksDbStore::Sweep(const std::vector<std::string>& digests) {
  for (const std::string& d : digests) {
    AOTCACHE_ASSIGN_OR_RETURN(int64_t count, ReferenceCount(d));
    if (count > 0) continue;
    AOTCACHE_ASSIGN_OR_RETURN(int64_t size, ArtifactSize(d));
    rocksdb::WriteBatch batch;
    batch.Delete(artifacts_, d);
    batch.Delete(artifact_sizes_, d);
    batch.Delete(refcounts_, d);
    AOTCACHE_RETURN_IF_ERROR(
        Write(WriteOptions(), batch, "deleting an artifact", {-size, 0}));
  }
  return absl::OkStatus();
}

absl::Status RocksDbStore::MendArtifactSize(const std::string& digest) {
  // Under the digest's lock, as it is now: a put or sweep since the
  // snapshot is not undone.
  DigestLocks lock(this, {digest});
  rocksdb::PinnableSlice artifact;
  rocksdb::Status st =
      db_->Get(rocksdb::ReadOptions(), artifacts_, ToSlice(digest), &artifact);
  if (!st.ok() && !st.IsNotFound()) {
    return FromRocksDb(st, "reading an artifact");
  }
  rocksdb::WriteBatch batch;
  if (st.ok()) {
    batch.Put(artifact_sizes_, ToSlice(digest),
              EncodeCount(static_cast<int64_t>(artifact.size())));
  } else {
    batch.Delete(artifact_sizes_, ToSlice(digest));
  }
  return Write(WriteOptions(), batch, "mending an artifact's size record");
}

absl::StatusOr<int64_t> RocksDbStore::ReferenceCount(
    absl::string_view digest) const {
  std::string value;
  rocksdb::Status st =
      db_->Get(rocksdb::ReadOptions(), refcounts_, ToSlice(digest), &value);
  if (st.IsNotFound()) return 0;
  AOTCACHE_RETURN_IF_ERROR(FromRocksDb(st, "reading a reference count"));
  return DecodeCount(value);
}

bool RocksDbStore::HasArtifact(absl::string_view digest) const {
  // Its size, written and deleted with it: a small value, where the
  // artifact's own may be a blob file's to read.
  rocksdb::PinnableSlice size;
  return db_
      ->Get(rocksdb::ReadOptions(), artifact_sizes_, ToSlice(digest), &size)
      .ok();
}

absl::StatusOr<int64_t> RocksDbStore::ArtifactSize(
    absl::string_view digest) const {
  std::string value;
  rocksdb::Status st = db_->Get(rocksdb::ReadOptions(), artifact_sizes_,
                                ToSlice(digest), &value);
  if (st.IsNotFound()) return 0;
  AOTCACHE_RETURN_IF_ERROR(FromRocksDb(st, "reading an artifact's size"));
  return StoredSize(digest, "") + DecodeCount(value);
}

absl::StatusOr<std::string> RocksDbStore::GetArtifact(
    absl::string_view digest) {
  std::string stored;
  rocksdb::Status st =
      db_->Get(rocksdb::ReadOptions(), artifacts_, ToSlice(digest), &stored);
  if (st.IsNotFound())
    return absl::NotFoundError(absl::StrCat("no artifact ", digest));
  if (!st.IsCorruption()) {
    AOTCACHE_RETURN_IF_ERROR(FromRocksDb(st, "reading an artifact"));
  }
  std::optional<std::string> bytes;
  if (!st.IsCorruption()) bytes = DecodeArtifact(stored, digest);
  if (!bytes.has_value()) {
    // Never served: dropped, so the caller recompiles and stores it again.
    // Read again under the lock: a concurrent reader may have dropped it.
    DigestLocks lock(this, {std::string(digest)});
    absl::StatusOr<int64_t> size = ArtifactSize(digest);
    if (size.ok() && *size > 0) {
      rocksdb::WriteBatch drop;
      drop.Delete(artifacts_, ToSlice(digest));
      drop.Delete(artifact_sizes_, ToSlice(digest));
      Write(WriteOptions(), drop, "dropping a bad artifact", {-*size, 0})
          .IgnoreError();
    }
    return absl::DataLossError(absl::StrCat(
        "artifact ", digest, " failed its digest check and was dropped"));
  }
  return *std::move(bytes);
}

RocksDbStore::CompressionCounters RocksDbStore::compression() const {
  return {artifact_bytes_written_.load(), artifact_bytes_stored_.load()};
}

}  // namespace aotcache
