// Cache: lookup-or-compile. Compile validates and analyzes a request, keys
// it, and answers from the store (hit) or compiles and stores the forward
// (miss; identical concurrent misses compile once). Training entries keep
// their backward graph; the backward artifact is compiled the first time any
// client asks (GetBackward) and stored for everyone after. Graphs whose
// constants are too large are compiled and not stored (bypass); their
// artifacts, forward and backward, are kept in memory per key (a bounded
// memo), so that the next request for the key is answered without
// compiling again. A failure to store never fails a request: the answer
// carries the artifact and a counter goes up.
// Thread-safety: thread-safe; the store and backend must outlive the cache.
#ifndef AOTCACHE_CORE_CACHE_CACHE_H_
#define AOTCACHE_CORE_CACHE_CACHE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "aotcache/v1/artifact.pb.h"
#include "aotcache/v1/store.pb.h"
#include "core/backend/backend.h"
#include "core/cache/single_flight.h"
#include "core/graph/validate.h"
#include "core/key/cache_key.h"
#include "core/store/entry_store.h"

namespace aotcache {

struct CacheOptions {
  GraphLimits limits;
  // Graphs with more constant bytes than this are compiled, not stored.
  int64_t max_cached_constant_bytes = int64_t{1} << 20;
  // The memo of bypassed artifacts holds at most this many bytes (the
  // oldest keys go first).
  int64_t max_bypass_memo_bytes = int64_t{256} << 20;
  // Overrides the build's pipeline version (tests).
  std::string pipeline_version;
  // A compile that failed for its graph (not for a passing condition) is
  // answered with the same error for this long, without compiling again.
  absl::Duration failure_memory = absl::Minutes(10);
};

struct CompileRequest {
  v1::Graph graph;
  v1::CompileOptions options;
  v1::Target target;
  // Optional: a digest of the encoded request this one was decoded from.
  // Once Compile has keyed it, HitByRequestDigest answers the same bytes
  // without decoding or analyzing them again.
  std::string request_digest;
};

enum class ForwardStatus { kHit, kMiss, kBypass };
enum class BackwardState { kNone, kPending, kReady };

struct CompileResult {
  std::string key;  // The 32-byte key.
  v1::Mode mode = v1::MODE_UNSPECIFIED;
  ForwardStatus status = ForwardStatus::kMiss;
  std::string bypass_reason;
  BackwardState backward = BackwardState::kNone;
  std::string metadata_bytes;  // The encoded v1::FunctionMetadata.
  std::string forward_bytes;   // The encoded forward v1::Artifact.
  // The stored forward's digest; empty for bypass (nothing is stored).
  std::string forward_digest;
  double compile_seconds = 0;     // Of the forward, when compiled or recorded.
  std::string not_stored_reason;  // A miss the store did not take: why.
  // A miss this request waited for: an identical concurrent request's
  // compile, done once for both.
  bool shared_compile = false;
};

struct BackwardResult {
  v1::Artifact artifact;
  // The artifact's digest when the store holds it (FetchArtifact serves
  // it); empty when it could not be stored: answer it inline.
  std::string stored_digest;
  std::string not_stored_reason;  // Why stored_digest is empty.
};

struct CacheCounters {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t bypasses = 0;
  std::map<std::string, int64_t> bypass_reasons;
  int64_t saves = 0;
  int64_t save_failures = 0;
  int64_t backward_compiles = 0;
  int64_t backward_hits = 0;
  int64_t bytes_stored = 0;
  double compile_seconds_saved = 0;
  int64_t corrupt_artifacts = 0;
  // Hits answered from a request seen before, without re-analysis.
  int64_t memoized_hits = 0;
  // Requests answered with a remembered compile failure.
  int64_t remembered_failures = 0;
  // Bypasses answered from the memo, not compiled (a bypassed key's
  // backward from the memo counts as a backward hit).
  int64_t bypass_memo_hits = 0;
};

class Cache {
 public:
  Cache(EntryStore* store, const Backend* backend, CacheOptions options);

  // InvalidArgument / ResourceExhausted for a bad or oversize request.
  absl::StatusOr<CompileResult> Compile(const CompileRequest& request);

  // The hit for an earlier Compile's request_digest, if that request was
  // cacheable and its entry is still stored; nullopt otherwise (decode the
  // request and call Compile). Touches no graph: the fast path of a hit.
  std::optional<CompileResult> HitByRequestDigest(
      const std::string& request_digest);

  // The backward artifact of a training entry, compiled on first request.
  // `request` rebuilds the entry if it is gone (deleted, evicted, or never
  // saved); its key must be `key` (InvalidArgument otherwise).
  // FailedPrecondition for an inference entry.
  absl::StatusOr<BackwardResult> GetBackward(const std::string& key,
                                             const CompileRequest* request);

  CacheCounters counters() const;
  // Requests currently waiting for an identical in-flight compile.
  int64_t waiting() const {
    return forward_flights_.waiting() + backward_flights_.waiting();
  }

 private:
  struct Analyzed;
  // The result points into `request`, which must outlive it.
  absl::StatusOr<Analyzed> AnalyzeRequest(const CompileRequest& request) const;
  absl::StatusOr<CompileResult> CompileAndStore(const CompileRequest& request,
                                                Analyzed& analyzed);
  // OK, or why the entry was not stored (the request is answered anyway).
  absl::Status Save(
      const v1::CacheEntry& entry,
      const std::vector<std::pair<std::string, std::string>>& artifacts);

  EntryStore* store_;
  const Backend* backend_;
  const CacheOptions options_;
  SingleFlight<CompileResult> forward_flights_;
  SingleFlight<BackwardResult> backward_flights_;

  // The hit for `key` from the store, or nullopt (absent, unreadable or
  // corrupt: the caller compiles).
  std::optional<CompileResult> TryHit(const std::string& key);

  mutable absl::Mutex mu_;
  CacheCounters counters_ ABSL_GUARDED_BY(mu_);
  // request_digest -> key, for cacheable requests that validated. Cleared
  // when full: it only saves work.
  static constexpr size_t kMaxMemoizedKeys = 1 << 16;
  absl::Mutex memo_mu_;
  absl::flat_hash_map<std::string, std::string> key_memo_
      ABSL_GUARDED_BY(memo_mu_);

  // Runs `compile` for `key` once among concurrent calls (setting
  // `*waited` for those that waited), unless it failed within
  // failure_memory: a failure another try would repeat is remembered (the
  // key's material decides it).
  absl::StatusOr<CompileResult> CompileOnce(
      const std::string& key,
      absl::FunctionRef<absl::StatusOr<CompileResult>()> compile, bool* waited);
  struct Failure {
    absl::Status status;
    absl::Time when;
  };
  static constexpr size_t kMaxRememberedFailures = 1 << 12;
  absl::Mutex failures_mu_;
  absl::flat_hash_map<std::string, Failure> failures_
      ABSL_GUARDED_BY(failures_mu_);

  // The memo of bypassed keys: their forward (and backward, once asked
  // for), never stored, within max_bypass_memo_bytes.
  struct Bypassed {
    CompileResult forward;
    std::optional<BackwardResult> backward;
    int64_t bytes = 0;
  };
  // Shared and never changed once in the memo: a lookup copies no bytes.
  std::shared_ptr<const Bypassed> FindBypassed(const std::string& key);
  void PutBypassed(const std::string& key, Bypassed memo);
  void RememberBypassed(const CompileResult& forward);
  void RememberBypassedBackward(const std::string& key,
                                const BackwardResult& backward);
  // Drops the oldest keys while over the budget.
  void TrimBypassed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(bypass_mu_);
  absl::Mutex bypass_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const Bypassed>> bypassed_
      ABSL_GUARDED_BY(bypass_mu_);
  std::deque<std::string> bypass_order_ ABSL_GUARDED_BY(bypass_mu_);
  int64_t bypass_bytes_ ABSL_GUARDED_BY(bypass_mu_) = 0;
};

}  // namespace aotcache

#endif  // AOTCACHE_CORE_CACHE_CACHE_H_
