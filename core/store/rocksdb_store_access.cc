// RocksDbStore's bookkeeping of use: hit counts and last access times (kept
// in memory, written in batches), the access records evictions read, and
// listing entries in key order.
#include <algorithm>

#include "core/status_macros.h"
#include "core/store/merge_operators.h"
#include "core/store/rocksdb_layout.h"
#include "core/store/rocksdb_status.h"
#include "core/store/rocksdb_store.h"

namespace aotcache {

absl::Status RocksDbStore::RecordHit(absl::string_view key) {
  const int64_t now = options_.now_micros();
  HitMap due;
  {
    absl::MutexLock lock(&hits_mu_);
    PendingHits& pending = pending_hits_[key];
    ++pending.count;
    pending.last_micros = std::max(pending.last_micros, now);
    if (pending_hits_.size() < kMaxPendingHits &&
        now - hits_written_micros_ < kHitFlushMicros) {
      return absl::OkStatus();
    }
    due.swap(pending_hits_);
    hits_written_micros_ = now;
  }
  return WriteHits(due);
}

absl::Status RocksDbStore::WriteHits(const HitMap& hits) {
  if (hits.empty()) return absl::OkStatus();
  rocksdb::WriteBatch batch;
  for (const auto& [key, pending] : hits) {
    batch.Merge(access_, key, EncodeAccess(pending.count, pending.last_micros));
  }
  // Bookkeeping: never logged or synced, whatever the durability policy. A
  // crash may lose the latest hit counts and access times, never an entry
  // or an artifact.
  rocksdb::WriteOptions unlogged;
  unlogged.disableWAL = true;
  return Write(unlogged, batch, "recording hits");
}

absl::StatusOr<RocksDbStore::Access> RocksDbStore::GetAccess(
    absl::string_view key) const {
  std::string value;
  rocksdb::Status st =
      db_->Get(rocksdb::ReadOptions(), access_, ToSlice(key), &value);
  Access access;
  if (!st.IsNotFound()) {
    AOTCACHE_RETURN_IF_ERROR(FromRocksDb(st, "reading access times"));
    DecodeAccess(value, &access.hits, &access.last_access_micros);
  }
  absl::MutexLock lock(&hits_mu_);
  auto it = pending_hits_.find(key);
  if (it != pending_hits_.end()) {
    access.hits += it->second.count;
    access.last_access_micros =
        std::max(access.last_access_micros, it->second.last_micros);
  }
  return access;
}

absl::StatusOr<RocksDbStore::Page> RocksDbStore::List(
    absl::string_view page_token, int page_size) const {
  if (page_size <= 0)
    return absl::InvalidArgumentError("page_size must be positive");
  Page page;
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), entries_));
  // The token is the last key of the previous page.
  if (page_token.empty()) {
    it->SeekToFirst();
  } else {
    it->Seek(ToSlice(page_token));
    if (it->Valid() && it->key() == ToSlice(page_token)) it->Next();
  }
  for (; it->Valid(); it->Next()) {
    if (static_cast<int>(page.entries.size()) == page_size) {
      page.next_page_token = page.entries.back().key();
      break;
    }
    v1::CacheEntry entry;
    if (!entry.ParseFromArray(it->value().data(),
                              static_cast<int>(it->value().size())) ||
        entry.key() != ToView(it->key())) {
      ++page.unreadable;
      continue;
    }
    page.entries.push_back(std::move(entry));
  }
  AOTCACHE_RETURN_IF_ERROR(FromRocksDb(it->status(), "listing entries"));
  return page;
}

absl::Status RocksDbStore::FlushHits() {
  HitMap due;
  {
    absl::MutexLock lock(&hits_mu_);
    due.swap(pending_hits_);
    hits_written_micros_ = options_.now_micros();
  }
  return WriteHits(due);
}

absl::Status RocksDbStore::ForEachAccess(
    absl::FunctionRef<bool(absl::string_view key, const Access&)> visit) const {
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), access_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    Access access;
    DecodeAccess(ToView(it->value()), &access.hits, &access.last_access_micros);
    if (!visit(ToView(it->key()), access)) break;
  }
  return FromRocksDb(it->status(), "reading access records");
}

}  // namespace aotcache
