#include "core/store/rocksdb_layout.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/store/merge_operators.h"
#include "rocksdb/cache.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/table.h"

namespace aotcache {

std::vector<std::string> Digests(const v1::CacheEntry& e) {
  std::vector<std::string> out;
  if (!e.forward_digest().empty()) out.push_back(e.forward_digest());
  if (!e.backward_digest().empty()) out.push_back(e.backward_digest());
  return out;
}

std::pair<rocksdb::Options, std::vector<rocksdb::ColumnFamilyDescriptor>>
DbOptions(const StoreOptions& options) {
  rocksdb::Options db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  // A torn last record is what a crash leaves (its write was never
  // acknowledged); damage before it would drop acknowledged writes, so the
  // open fails instead and says how to repair (RocksDB's default replays up
  // to the damage and drops the rest, silently).
  db_options.wal_recovery_mode =
      rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  // Column families flushed together: without a WAL (Durability::kNoWal) an
  // entry must never reach disk without its artifacts and schema version.
  db_options.atomic_flush = true;
  // No preallocation: RocksDB would reserve a write buffer's size and more
  // (72 MB) for every new log, which on a small volume reads as a full disk
  // before anything is written.
  db_options.allow_fallocate = false;
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  rocksdb::ColumnFamilyOptions cf;
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  rocksdb::ColumnFamilyOptions artifacts_cf = cf;
  artifacts_cf.enable_blob_files = true;  // Large values live in blob files.
  artifacts_cf.min_blob_size = 4096;
  rocksdb::ColumnFamilyOptions refcount_cf = cf;
  refcount_cf.merge_operator = NewCountMergeOperator();
  rocksdb::ColumnFamilyOptions access_cf = cf;
  access_cf.merge_operator = NewAccessMergeOperator();
  rocksdb::ColumnFamilyOptions meta_cf = cf;  // The size: int64 sums.
  meta_cf.merge_operator = NewCountMergeOperator();

  std::vector<rocksdb::ColumnFamilyDescriptor> families = {
      {rocksdb::kDefaultColumnFamilyName, cf},
      {kEntries, cf},
      {kArtifacts, artifacts_cf},
      {kRefcounts, refcount_cf},
      {kAccess, access_cf},
      {kMeta, meta_cf},
      {kArtifactSizes, cf}};
  return {db_options, families};
}

int64_t FreeBytes(const std::string& path) {
  struct statvfs st;
  if (statvfs(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.f_bavail) * static_cast<int64_t>(st.f_frsize);
}

absl::StatusOr<int> LockStore(const std::string& path) {
  const std::string file = path + "/LOCK";
  int fd = open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open ", file, ": ", std::strerror(errno)));
  }
  struct flock lock = {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  if (fcntl(fd, F_SETLK, &lock) != 0) {
    close(fd);
    return absl::UnavailableError(absl::StrCat(
        "store ", path, " is in use by another process (lock ", file, ")"));
  }
  return fd;
}

std::string RepairHint(const std::string& path, const rocksdb::Status& st) {
  if (!st.IsCorruption() && !st.IsIOError()) return "";
  return absl::StrCat(
      ". The store is damaged: stop every aotcached using it, then run "
      "'aotcache repair --data_dir=",
      std::filesystem::path(path).parent_path().string(),
      "' (it salvages what it can and reports what was lost), or move the "
      "data dir away to start empty");
}

bool HasStoreFiles(const std::string& path) {
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(path, ec)) {
    const std::string name = f.path().filename().string();
    if (absl::StartsWith(name, "MANIFEST-") || absl::EndsWith(name, ".sst") ||
        absl::EndsWith(name, ".log") || absl::EndsWith(name, ".blob")) {
      return true;
    }
  }
  return false;
}

}  // namespace aotcache
