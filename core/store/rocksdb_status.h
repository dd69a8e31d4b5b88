// The one place rocksdb::Status becomes absl::Status, with codes chosen by
// what the caller should do.
// Thread-safety: pure function.
#ifndef AOTCACHE_CORE_STORE_ROCKSDB_STATUS_H_
#define AOTCACHE_CORE_STORE_ROCKSDB_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "rocksdb/status.h"

namespace aotcache {

// NotFound stays NotFound; corruption is DataLoss; disk full is
// ResourceExhausted; busy, timed out, try-again or incomplete (a write
// that would have waited, WriteOptions::no_slowdown) is Unavailable; I/O
// errors are Unavailable (retryable: the disk may come back); anything else
// is Internal. Messages read "context: rocksdb's message".
absl::Status FromRocksDb(const rocksdb::Status& status,
                         absl::string_view context);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_STORE_ROCKSDB_STATUS_H_
