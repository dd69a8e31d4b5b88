// RequestKeyMemo: the key of each request seen before, by the digest of its
// encoded bytes, so that the same bytes are answered from the store without
// being decoded and analyzed again (Cache::HitByRequestDigest). Only
// cacheable requests that validated are remembered. At most kMaxKeys are
// held (cleared when full: it only saves work).
// Thread-safety: thread-safe.
#ifndef AOTCACHE_CORE_CACHE_REQUEST_KEY_MEMO_H_
#define AOTCACHE_CORE_CACHE_REQUEST_KEY_MEMO_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace aotcache {

class RequestKeyMemo {
 public:
  static constexpr size_t kMaxKeys = 1 << 16;

  std::optional<std::string> Find(const std::string& request_digest) const {
    absl::MutexLock lock(&mu_);
    auto it = keys_.find(request_digest);
    if (it == keys_.end()) return std::nullopt;
    return it->second;
  }

  void Remember(const std::string& request_digest, const std::string& key) {
    absl::MutexLock lock(&mu_);
    if (keys_.size() >= kMaxKeys) keys_.clear();
    keys_.insert_or_assign(request_digest, key);
  }

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::string> keys_ ABSL_GUARDED_BY(mu_);
};

}  // namespace aotcache

#endif  // AOTCACHE_CORE_CACHE_REQUEST_KEY_MEMO_H_
