// RocksDbStore: the persistent cache. Entries by key; artifacts by content
// digest, shared by every entry that produces the same bytes and checked
// against their digest on every read.
//
// On disk (schema version kStoreSchemaVersion; a mismatch on open is
// FailedPrecondition, never a silent wipe), column families:
//   entries    key (32 bytes)           -> CacheEntry
//   artifacts  digest (64 hex chars)     -> artifact bytes, or a zstd frame
//                                           of them (artifact_codec.h)
//   refcounts  digest                    -> int64 LE, by merge (+1/-1)
//   access     key                       -> uint64 LE hits, int64 LE last
//                                           access micros, by merge
//   meta       "schema_version"          -> decimal string
//              "usage_bytes", "usage_entries" -> int64 LE, by merge
//   artifact_sizes  digest               -> int64 LE: the artifact's size at
//                                           rest, written and deleted with it
//                                           (what HasArtifact and sweeps read,
//                                           not the artifact's blob)
// Every write that adds or removes an entry or an artifact merges the change
// of the store's size into meta in the same WriteBatch, so the size is read
// in constant time and never disagrees with what a crash left (Verify
// recounts it and says by how much it had drifted). The size is what the
// entries and artifacts take as stored, with their keys (usage()); RocksDB's
// own files add their overhead on top. Version 1 stores (before the size
// was kept) are counted once when first opened, then are version 2.
// Open lists every column family; an unknown one is an error. Any other tool
// that opens this database must set the same merge operators on refcounts
// and access: without them RocksDB cannot flush those families, and the
// open loses recent writes (seen in tests).
//
// Shared artifacts: every write that changes an entry's references updates
// the reference counts in the same WriteBatch as the entry, under locks
// striped by digest; an artifact is deleted only with its count read under
// the same lock (by a delete, in the entry's own batch when it held the
// last references; by a sweep after a replacing put), so a concurrent put of
// an entry that references it either lands before (the count is positive:
// kept) or after (the bytes are written again in its own batch). Writes to one
// key are serialized by locks striped by key, taken before digest locks.
//
// Durability is a named choice (StoreOptions::durability); the default keeps
// the write-ahead log without syncing it: a process crash loses nothing, a
// machine crash may lose the last writes.
//
// Eviction (evictor.h chooses what): EvictIfIdle deletes an entry under its
// key lock unless it was used since a given time, so an entry hit while a
// sweep runs survives it.
// Thread-safety: thread-safe; every method may be called concurrently.
#ifndef AOTCACHE_CORE_STORE_ROCKSDB_STORE_H_
#define AOTCACHE_CORE_STORE_ROCKSDB_STORE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "aotcache/v1/store.pb.h"
#include "core/store/artifact_codec.h"
#include "core/store/entry_store.h"
#include "rocksdb/db.h"
#include "rocksdb/write_batch.h"

namespace aotcache {

inline constexpr int kStoreSchemaVersion = 2;

enum class Durability {
  kWalNoSync,  // Default: survives a process crash.
  kSync,       // Every write synced: survives a machine crash; slower.
  kNoWal,      // Fastest; a process crash may lose recent writes.
};

struct StoreOptions {
  std::string path;
  Durability durability = Durability::kWalNoSync;
  // Writes are refused (ResourceExhausted, nothing written) while fewer
  // bytes than this would stay free on the store's file system; a store
  // opened with less free is opened read-only. RocksDB must never meet a
  // full disk: its next write after a failed one aborts the process.
  int64_t min_free_bytes = int64_t{64} << 20;
  int64_t block_cache_bytes = int64_t{64} << 20;
  // Over this many bytes (usage()) a write that would grow the store is
  // refused (IsCacheFull) and nothing is written; 0: no limit.
  int64_t hard_limit_bytes = 0;
  // How artifacts are written (those stored before are read either way).
  ArtifactCompression compression;
  // Microseconds since the epoch; injected so tests need no sleeps.
  std::function<int64_t()> now_micros;
};

class RocksDbStore final : public EntryStore {
 public:
  // FailedPrecondition for a store of another schema version or with
  // unknown column families; Unavailable if another process holds it.
  static absl::StatusOr<std::unique_ptr<RocksDbStore>> Open(
      StoreOptions options);
  ~RocksDbStore();

  // Salvages a damaged store (one that does not open: a damaged WAL,
  // MANIFEST or table file, a missing CURRENT), keeping every entry and
  // artifact it can read, in the least destructive way that opens it:
  //   1. as it is, its log replayed (a damaged tail, then damaged records
  //      of the log, skipped and said);
  //   2. with CURRENT pointed at each MANIFEST, newest first;
  //   3. RocksDB's repairer, which rebuilds the MANIFEST from the table
  //      files and sets what it replaced or could not read aside in
  //      <path>/lost; the artifacts of blob files (which it does not
  //      recover) are read back from them first, each checked against its
  //      digest.
  // Each step that opens is flushed (the log's writes into table files).
  // Then every entry and artifact is verified (Verify), and the entries
  // whose artifacts did not survive are dropped. Unavailable while a
  // daemon holds the store.
  struct RepairReport {
    int64_t entries = 0;    // Whole (with their artifacts) after the repair.
    int64_t artifacts = 0;  // Readable after the repair.
    std::vector<std::string> dropped_entries;    // Keys.
    std::vector<std::string> dropped_artifacts;  // Digests.
    std::vector<std::string> steps;  // What was done, what was damaged.
    // Damaged records of the log were dropped: entries that cannot be
    // named may be lost.
    bool lost_unnamed = false;
  };
  static absl::StatusOr<RepairReport> Repair(const std::string& path);

  // NotFound on a miss (not an error to log).
  absl::StatusOr<v1::CacheEntry> Lookup(absl::string_view key) const override;
  absl::StatusOr<v1::CacheEntryHeader> LookupHeader(
      absl::string_view key) const override;

  // Writes `entry` (replacing any entry of its key) and, in the same batch,
  // the artifacts it references that are given as (digest, bytes). A
  // referenced digest not given must already be stored (FailedPrecondition
  // otherwise).
  absl::Status Put(const v1::CacheEntry& entry,
                   const std::vector<std::pair<std::string, std::string>>&
                       artifacts) override;

  // NotFound if absent. Artifacts no entry references any more are deleted.
  // An entry that does not parse is deleted too (its artifacts' counts are
  // left as they are: a leak, never a loss).
  absl::Status Delete(absl::string_view key);

  // What the entries and artifacts take as stored, with their keys.
  struct Usage {
    int64_t bytes = 0;
    int64_t entries = 0;
  };
  Usage usage() const { return {usage_bytes_.load(), usage_entries_.load()}; }
  int64_t hard_limit_bytes() const { return options_.hard_limit_bytes; }
  // The store's clock (StoreOptions::now_micros), access times' too.
  int64_t NowMicros() const { return options_.now_micros(); }

  // Deletes the entry of `key` (as Delete) unless it was used at or after
  // `used_since_micros`. An access record with no entry (the entry was
  // deleted as it was hit) is removed. The delete does not wait out a
  // RocksDB write stall under the key's lock: it answers kBusy instead (try
  // again later). `lock_held` is set to how long the key's lock was held.
  enum class Eviction { kEvicted, kSpared, kBusy };
  absl::StatusOr<Eviction> EvictIfIdle(absl::string_view key,
                                       int64_t used_since_micros,
                                       absl::Duration* lock_held);

  // The bytes of an artifact, checked against the digest. DataLoss when
  // they do not match (the bad bytes are dropped: the caller recompiles),
  // NotFound when absent.
  absl::StatusOr<std::string> GetArtifact(absl::string_view digest) override;
  bool HasArtifact(absl::string_view digest) const override;
  absl::StatusOr<int64_t> ReferenceCount(absl::string_view digest) const;
  // What an artifact counts for in usage() (StoredSize); 0 when absent.
  absl::StatusOr<int64_t> ArtifactSize(absl::string_view digest) const;

  // Kept in memory and written in batches (every second, or every
  // kMaxPendingHits keys, and on close), unlogged whatever the durability:
  // a crash may lose recent hit counts. GetAccess sees every recorded hit.
  absl::Status RecordHit(absl::string_view key) override;
  struct Access {
    uint64_t hits = 0;
    int64_t last_access_micros = 0;
  };
  absl::StatusOr<Access> GetAccess(absl::string_view key) const;
  // Writes the hits kept in memory now.
  absl::Status FlushHits();
  // Calls `visit` with every entry's access record as written (FlushHits
  // first to see the latest), in key order, until it returns false.
  absl::Status ForEachAccess(
      absl::FunctionRef<bool(absl::string_view key, const Access&)> visit)
      const;

  // Entries that do not parse or are not their key's are left out of a
  // page and counted.
  struct Page {
    std::vector<v1::CacheEntry> entries;
    std::string next_page_token;  // Empty on the last page.
    int64_t unreadable = 0;
  };
  absl::StatusOr<Page> List(absl::string_view page_token, int page_size) const;

  // Artifact bytes written since open, and what they took at rest.
  struct CompressionCounters {
    int64_t artifact_bytes = 0;
    int64_t stored_bytes = 0;
  };
  CompressionCounters compression() const;

  // Empty while the store takes writes; else why not (a full disk, a write
  // that failed, a read-only open), for stats and logs.
  std::string WriteProblem() const;

  // Empty when the store opened whole; else what its open dropped (a log
  // that ended in a damaged record), for stats, verify and logs.
  const std::string& recovery_damage() const { return recovery_damage_; }

  // Re-hashes every artifact and reads every entry; drops and reports the
  // artifacts whose bytes do not match their digest and the entries that
  // do not parse or are not their key's. RocksDB's own checksums are
  // checked on every block read: an unreadable block is DataLoss naming it.
  struct VerifyReport {
    int64_t checked = 0;  // Artifacts.
    std::vector<std::string> corrupt;
    int64_t checked_entries = 0;
    std::vector<std::string> corrupt_entries;  // Keys.
    std::string recovery_damage;               // recovery_damage().
    // How far the size kept (usage()) was from the size counted; corrected.
    Usage usage_drift;
  };
  absl::StatusOr<VerifyReport> Verify();

 private:
  RocksDbStore() = default;

  // Repair's last step: the store at `path` opens and verifies; fills
  // `report` with what is left and what was dropped.
  static absl::Status CheckRepaired(const std::string& path,
                                    RepairReport* report);

  // The entry under `key` parsed as Message (CacheEntry or its header).
  template <typename Message>
  absl::StatusOr<Message> ReadEntry(absl::string_view key) const;

  // The entry under `key` as stored; NotFound when absent.
  absl::StatusOr<std::string> ReadRawEntry(absl::string_view key) const;
  // Delete's work, the key's lock held; `value` is the entry as stored. The
  // entry and the artifacts it held the last references to go in one write.
  absl::Status DeleteLocked(absl::string_view key, const std::string& value,
                            const rocksdb::WriteOptions& options);

  // Counts every entry and artifact as of now and corrects the size kept by
  // the difference (returned), gives entries without an access record one
  // (their creation time) and artifacts their size record. Safe while the
  // store is in use.
  absl::StatusOr<Usage> RecountUsage();
  // Writes `digest`'s size record as its artifact is now (deletes it when
  // the artifact is gone).
  absl::Status MendArtifactSize(const std::string& digest);
  // The size as last written, into usage_bytes_ / usage_entries_.
  absl::Status LoadUsage();

  static constexpr int kStripes = 64;
  absl::Mutex& KeyLock(absl::string_view key);
  // Locks the stripes of `digests` in a fixed order; unlocks on destruction.
  class DigestLocks;
  // Deletes the artifacts among `digests` no entry references. Their digest
  // locks must be held.
  absl::Status Sweep(const std::vector<std::string>& digests);
  rocksdb::WriteOptions WriteOptions() const;
  // Every write goes through here: refused while the disk is (nearly) full
  // or after a failed write (which stops writes until a restart). `grows`,
  // merged into the size in the same batch, is what the write adds to it.
  absl::Status Write(const rocksdb::WriteOptions& options,
                     rocksdb::WriteBatch& batch, absl::string_view what,
                     Usage grows);
  absl::Status Write(const rocksdb::WriteOptions& options,
                     rocksdb::WriteBatch& batch, absl::string_view what) {
    return Write(options, batch, what, Usage());
  }

  struct PendingHits {
    uint64_t count = 0;
    int64_t last_micros = 0;
  };
  using HitMap = absl::flat_hash_map<std::string, PendingHits>;
  // Merges `hits` into the access column family, unlogged.
  absl::Status WriteHits(const HitMap& hits);
  static constexpr size_t kMaxPendingHits = 4096;
  static constexpr int64_t kHitFlushMicros = 1000000;
  mutable absl::Mutex hits_mu_;
  HitMap pending_hits_ ABSL_GUARDED_BY(hits_mu_);
  int64_t hits_written_micros_ ABSL_GUARDED_BY(hits_mu_) = 0;

  StoreOptions options_;
  std::string recovery_damage_;  // Constant after Open.
  bool read_only_ = false;  // Opened on a full disk: serves, stores nothing.
  int lock_fd_ = -1;        // The store's LOCK, held when read-only.
  mutable absl::Mutex writes_mu_;
  std::string writes_stopped_ ABSL_GUARDED_BY(writes_mu_);  // Why, if so.
  std::atomic<int64_t> artifact_bytes_written_{0};
  std::atomic<int64_t> artifact_bytes_stored_{0};
  std::atomic<int64_t> usage_bytes_{0};
  std::atomic<int64_t> usage_entries_{0};
  std::array<absl::Mutex, kStripes> key_locks_;
  std::array<absl::Mutex, kStripes> digest_locks_;
  // Column family handles are destroyed before the DB (member order: db_
  // is declared first, so it is destroyed last).
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* entries_ = nullptr;
  rocksdb::ColumnFamilyHandle* artifacts_ = nullptr;
  rocksdb::ColumnFamilyHandle* refcounts_ = nullptr;
  rocksdb::ColumnFamilyHandle* access_ = nullptr;
  rocksdb::ColumnFamilyHandle* meta_ = nullptr;
  rocksdb::ColumnFamilyHandle* artifact_sizes_ = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;  // All, for cleanup.
};

}  // namespace aotcache

#endif  // AOTCACHE_CORE_STORE_ROCKSDB_STORE_H_
