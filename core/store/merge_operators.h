// RocksDB merge operators of the store: artifact reference counts (int64
// sums) and access records (hit counts summed, last access time maxed), so
// neither needs a read-modify-write.
// Thread-safety: stateless; RocksDB calls them from any thread.
#ifndef AOTCACHE_CORE_STORE_MERGE_OPERATORS_H_
#define AOTCACHE_CORE_STORE_MERGE_OPERATORS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "rocksdb/merge_operator.h"

namespace aotcache {

std::shared_ptr<rocksdb::MergeOperator> NewCountMergeOperator();
std::string EncodeCount(int64_t delta);
int64_t DecodeCount(absl::string_view value);  // 0 for malformed values.

std::shared_ptr<rocksdb::MergeOperator> NewAccessMergeOperator();
std::string EncodeAccess(uint64_t hits, int64_t last_access_micros);
void DecodeAccess(absl::string_view value, uint64_t* hits,
                  int64_t* last_access_micros);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_STORE_MERGE_OPERATORS_H_
