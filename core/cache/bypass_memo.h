// BypassMemo: the artifacts of bypassed keys -- compiled and never stored
// (their constants are too large to cache) -- the forward, and the backward
// once a client asked for it, kept in memory within a byte budget (the
// oldest keys go first), so that the next request for the key is answered
// without compiling again.
// Thread-safety: thread-safe. An Entry is shared and never changed once
// in the memo: a lookup copies no bytes.
#ifndef AOTCACHE_CORE_CACHE_BYPASS_MEMO_H_
#define AOTCACHE_CORE_CACHE_BYPASS_MEMO_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "core/cache/cache_results.h"

namespace aotcache {

class BypassMemo {
 public:
  struct Entry {
    CompileResult forward;
    std::optional<BackwardResult> backward;
    int64_t bytes = 0;  // Of the artifacts and metadata held.
  };

  explicit BypassMemo(int64_t max_bytes) : max_bytes_(max_bytes) {}

  // The entry of `key`, or nullptr.
  std::shared_ptr<const Entry> Find(const std::string& key) const;
  // Keeps `forward` under its key (as a fresh answer: not shared_compile).
  void PutForward(const CompileResult& forward);
  // Adds `backward` to the entry of `key`, if the memo still holds it.
  void PutBackward(const std::string& key, const BackwardResult& backward);

  int64_t bytes() const;

 private:
  // Puts `entry` under `key`, in place of any earlier one.
  void Put(const std::string& key, Entry entry);
  // Drops the oldest keys while over the budget.
  void Trim() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int64_t max_bytes_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const Entry>> entries_
      ABSL_GUARDED_BY(mu_);
  std::deque<std::string> oldest_first_ ABSL_GUARDED_BY(mu_);
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace aotcache

#endif  // AOTCACHE_CORE_CACHE_BYPASS_MEMO_H_
