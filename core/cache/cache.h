// Cache: lookup-or-compile. Compile validates and analyzes a request, keys
// it, and answers from the store (hit) or compiles and stores the forward
// (miss; identical concurrent misses compile once). Training entries keep
// their backward graph; the backward artifact is compiled the first time any
// client asks (GetBackward) and stored for everyone after. Graphs whose
// constants are too large are compiled and not stored (bypass); their
// artifacts, forward and backward, are kept in memory per key (a bounded
// memo), so that the next request for the key is answered without
// compiling again (BypassMemo). A failure to store never fails a request:
// the answer carries the artifact and a counter goes up. A compile that
// failed for its graph is remembered a while (FailureMemory), and a request
// seen before is answered by its bytes' digest (RequestKeyMemo). The cache
// does not log: what an operator should hear goes to
// CacheOptions::on_warning.
// Thread-safety: thread-safe; the store and backend must outlive the cache.
#ifndef AOTCACHE_CORE_CACHE_CACHE_H_
#define AOTCACHE_CORE_CACHE_CACHE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "aotcache/v1/artifact.pb.h"
#include "aotcache/v1/store.pb.h"
#include "core/backend/backend.h"
#include "core/backend/compile_plan.h"
#include "core/cache/bypass_memo.h"
#include "core/cache/cache_results.h"
#include "core/cache/failure_memory.h"
#include "core/cache/request_key_memo.h"
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
  // The time (failure memory, compile seconds); tests inject their own.
  std::function<absl::Time()> clock = absl::Now;
  // Told what an operator should hear (an entry not saved, a corrupt
  // artifact dropped); the server logs it. May be empty.
  std::function<void(const std::string&)> on_warning;
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

// What a hit answers with: the forward artifact's bytes, or only its digest
// (the caller fetches the bytes if it lacks them, checked against the
// digest then): the artifact is then known to be stored but not read.
enum class HitBytes { kInline, kByReference };

// What a miss does: compile (and store), or answer NotFound (a caller who
// may only read what is cached).
enum class OnMiss { kCompile, kNotFound };

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
  // Misses answered NotFound (OnMiss::kNotFound), forward or backward.
  int64_t misses_not_compiled = 0;
};

class Cache {
 public:
  Cache(EntryStore* store, const Backend* backend, CacheOptions options);

  // InvalidArgument / ResourceExhausted for a bad or oversize request;
  // NotFound for a miss with OnMiss::kNotFound.
  absl::StatusOr<CompileResult> Compile(const CompileRequest& request,
                                        OnMiss on_miss = OnMiss::kCompile);

  // The hit for an earlier Compile's request_digest, if that request was
  // cacheable and its entry is still stored; nullopt otherwise (decode the
  // request and call Compile). Touches no graph: the fast path of a hit.
  std::optional<CompileResult> HitByRequestDigest(
      const std::string& request_digest, HitBytes bytes = HitBytes::kInline);

  // The backward artifact of a training entry, compiled on first request.
  // `request` rebuilds the entry if it is gone (deleted, evicted, or never
  // saved); its key must be `key` (InvalidArgument otherwise).
  // FailedPrecondition for an inference entry. With OnMiss::kNotFound, only
  // a backward compiled before is answered (NotFound otherwise), and
  // `request` is not used.
  absl::StatusOr<BackwardResult> GetBackward(const std::string& key,
                                             const CompileRequest* request,
                                             OnMiss on_miss = OnMiss::kCompile);

  // The key this cache gives the request `entry` was stored for (its
  // graph, options and target): what an imported entry's key must be to be
  // hit here. An error when the graph does not analyze.
  absl::StatusOr<std::string> KeyOf(const v1::CacheEntry& entry) const;

  CacheCounters counters() const;
  // Requests currently waiting for an identical in-flight compile.
  int64_t waiting() const {
    return forward_flights_.waiting() + backward_flights_.waiting();
  }

 private:
  struct Analyzed;
  // The result points into `request`, which must outlive it.
  absl::StatusOr<Analyzed> AnalyzeRequest(const CompileRequest& request) const;
  // Plans an analyzed request's compile and compiles its forward.
  absl::StatusOr<std::pair<CompilePlan, v1::Artifact>> PlanAndCompileForward(
      const Analyzed& a) const;
  // The entry an analyzed request makes with `plan`, without artifacts.
  v1::CacheEntry EntryOf(const Analyzed& a, const CompilePlan& plan,
                         const v1::CompileOptions& options) const;
  absl::StatusOr<CompileResult> CompileAndStore(const CompileRequest& request,
                                                const Analyzed& analyzed);
  // Runs `compile` for `key` once among concurrent calls (setting
  // `*waited` for those that waited), unless it failed recently for its
  // graph (FailureMemory).
  absl::StatusOr<CompileResult> CompileOnce(
      const std::string& key,
      absl::FunctionRef<absl::StatusOr<CompileResult>()> compile, bool* waited);
  // The hit for `key` from the store, or nullopt (absent, unreadable or
  // corrupt: the caller compiles).
  std::optional<CompileResult> TryHit(const std::string& key,
                                      HitBytes bytes = HitBytes::kInline);

  // GetBackward's steps, once per key among concurrent calls.
  struct BackwardEntry;
  absl::StatusOr<BackwardResult> BuildBackward(const std::string& key,
                                               const CompileRequest* request);
  // The entry whose backward is asked for: stored, or rebuilt from the
  // request (deleted, evicted, or never saved: a bypassed key's never is).
  absl::StatusOr<BackwardEntry> EntryForBackward(const std::string& key,
                                                 const CompileRequest* request,
                                                 const BypassMemo::Entry* memo);
  // The backward compiled before for `key` (memo or store), else NotFound.
  absl::StatusOr<BackwardResult> BackwardCompiledBefore(const std::string& key);
  // The stored backward of `entry`, if it has one that reads back.
  std::optional<BackwardResult> StoredBackward(const v1::CacheEntry& entry);
  // The forward `entry` stores, or nullopt if it is gone or corrupt.
  std::optional<v1::Artifact> StoredForward(const v1::CacheEntry& entry);

  // OK, or why the entry was not stored (the request is answered anyway).
  absl::Status Save(
      const v1::CacheEntry& entry,
      const std::vector<std::pair<std::string, std::string>>& artifacts);
  void Count(absl::FunctionRef<void(CacheCounters&)> update);
  void Warn(const std::string& message) const;
  double SecondsSince(absl::Time start) const;

  EntryStore* store_;
  const Backend* backend_;
  const CacheOptions options_;
  SingleFlight<CompileResult> forward_flights_;
  SingleFlight<BackwardResult> backward_flights_;
  RequestKeyMemo request_keys_;
  FailureMemory failures_;
  BypassMemo bypass_memo_;
  mutable absl::Mutex mu_;
  CacheCounters counters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace aotcache

#endif  // AOTCACHE_CORE_CACHE_CACHE_H_
