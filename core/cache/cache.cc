#include "core/cache/cache.h"

#include <chrono>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/analysis/analyze.h"
#include "core/backend/compile_plan.h"
#include "core/graph/canonical_graph.h"
#include "core/graph/deterministic_bytes.h"
#include "core/key/digest.h"
#include "core/status_macros.h"
#include "glog/logging.h"

namespace aotcache {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

int64_t ConstantBytes(const v1::Graph& g) {
  int64_t n = 0;
  for (const v1::Constant& c : g.constants())
    n += static_cast<int64_t>(c.data().size());
  return n;
}

BackwardState StateOf(const v1::CacheEntryHeader& e) {
  if (e.mode() != v1::MODE_TRAINING) return BackwardState::kNone;
  return e.backward_digest().empty() ? BackwardState::kPending
                                     : BackwardState::kReady;
}

}  // namespace

// Points into the request's graph: the request must outlive it.
struct Cache::Analyzed {
  Analysis analysis;
  v1::Target target;  // The backend's ArtifactTarget: key material.
  std::string key;
  std::string bypass_reason;
};

Cache::Cache(EntryStore* store, const Backend* backend, CacheOptions options)
    : store_(store), backend_(backend), options_(std::move(options)) {}

absl::StatusOr<Cache::Analyzed> Cache::AnalyzeRequest(
    const CompileRequest& request) const {
  Analyzed a;
  // Before anything is remembered: a bogus target is the request's fault.
  AOTCACHE_ASSIGN_OR_RETURN(a.target, backend_->ArtifactTarget(request.target));
  AOTCACHE_ASSIGN_OR_RETURN(
      a.analysis, Analyze(request.graph, request.options, options_.limits));
  KeyContext context;
  context.pipeline_version = options_.pipeline_version.empty()
                                 ? PipelineVersion()
                                 : options_.pipeline_version;
  context.target = a.target;
  context.backend_name = std::string(backend_->name());
  context.backend_version = std::string(backend_->version());
  CacheKey key = ComputeKey(a.analysis.graph, a.analysis.view_and_mutation,
                            a.analysis.mode, request.options, context);
  a.key.assign(reinterpret_cast<const char*>(key.bytes.data()),
               key.bytes.size());
  if (ConstantBytes(request.graph) > options_.max_cached_constant_bytes) {
    a.bypass_reason =
        absl::StrCat("constants of ", ConstantBytes(request.graph),
                     " bytes exceed the cacheable limit of ",
                     options_.max_cached_constant_bytes);
  }
  return a;
}

absl::Status Cache::Save(
    const v1::CacheEntry& entry,
    const std::vector<std::pair<std::string, std::string>>& artifacts) {
  absl::Status st = store_ == nullptr ? absl::UnavailableError("no store")
                                      : store_->Put(entry, artifacts);
  if (!st.ok()) {
    LOG(WARNING) << "entry " << absl::BytesToHexString(entry.key())
                 << " not saved (answered anyway): " << st;
    absl::MutexLock lock(&mu_);
    ++counters_.save_failures;
    return st;
  }
  absl::MutexLock lock(&mu_);
  ++counters_.saves;
  for (const auto& [digest, bytes] : artifacts)
    counters_.bytes_stored += bytes.size();
  return absl::OkStatus();
}

absl::StatusOr<CompileResult> Cache::CompileAndStore(
    const CompileRequest& request, Analyzed& a) {
  auto start = std::chrono::steady_clock::now();
  AOTCACHE_ASSIGN_OR_RETURN(CompilePlan plan, PlanCompilation(a.analysis));
  AOTCACHE_ASSIGN_OR_RETURN(v1::Artifact forward,
                            CompileForward(plan, *backend_, a.target));
  double seconds = SecondsSince(start);
  CompileResult result;
  result.key = a.key;
  result.mode = a.analysis.mode;
  result.metadata_bytes = DeterministicBytes(plan.metadata);
  result.forward_bytes = DeterministicBytes(forward);
  result.compile_seconds = seconds;
  if (!a.bypass_reason.empty()) {
    result.status = ForwardStatus::kBypass;
    result.bypass_reason = a.bypass_reason;
    absl::MutexLock lock(&mu_);
    ++counters_.bypasses;
    ++counters_.bypass_reasons["constants too large"];
    return result;
  }
  result.status = ForwardStatus::kMiss;
  result.backward = a.analysis.mode == v1::MODE_TRAINING
                        ? BackwardState::kPending
                        : BackwardState::kNone;
  v1::CacheEntry entry;
  entry.set_key(a.key);
  entry.set_mode(a.analysis.mode);
  *entry.mutable_metadata() = plan.metadata;
  *entry.mutable_graph() = CanonicalGraph(a.analysis.graph);
  *entry.mutable_options() = request.options;
  *entry.mutable_target() = a.target;
  entry.set_backend(std::string(backend_->name()));
  const std::string& bytes = result.forward_bytes;
  entry.set_forward_digest(Sha256Hex(bytes));
  result.forward_digest = entry.forward_digest();
  entry.set_forward_bytes(static_cast<int64_t>(bytes.size()));
  entry.set_forward_compile_seconds(seconds);
  if (plan.backward_graph.has_value()) {
    *entry.mutable_backward_graph() = *plan.backward_graph;
    *entry.mutable_backward_convention() = plan.backward_spec.convention;
  }
  {
    absl::MutexLock lock(&mu_);
    ++counters_.misses;
  }
  // Persisted before the answer leaves.
  absl::Status saved = Save(entry, {{entry.forward_digest(), bytes}});
  if (!saved.ok()) {
    result.forward_digest.clear();  // Not stored: answered inline.
    result.not_stored_reason = std::string(saved.message());
  }
  return result;
}

std::optional<CompileResult> Cache::TryHit(const std::string& key) {
  if (store_ == nullptr) return std::nullopt;
  absl::StatusOr<v1::CacheEntryHeader> entry = store_->LookupHeader(key);
  if (!entry.ok()) return std::nullopt;
  absl::StatusOr<std::string> bytes =
      store_->GetArtifact(entry->forward_digest());
  if (!bytes.ok()) {
    if (absl::IsDataLoss(bytes.status())) {
      LOG(WARNING) << "artifact " << entry->forward_digest()
                   << " is corrupt: dropped, recompiling";
      absl::MutexLock lock(&mu_);
      ++counters_.corrupt_artifacts;  // Never served: recompiled instead.
    }
    return std::nullopt;
  }
  store_->RecordHit(key).IgnoreError();  // Bookkeeping only.
  CompileResult result;
  result.key = key;
  result.mode = entry->mode();
  result.status = ForwardStatus::kHit;
  result.backward = StateOf(*entry);
  result.metadata_bytes = std::move(*entry->mutable_metadata());
  result.forward_digest = std::move(*entry->mutable_forward_digest());
  result.forward_bytes = *std::move(bytes);
  result.compile_seconds = entry->forward_compile_seconds();
  absl::MutexLock lock(&mu_);
  ++counters_.hits;
  counters_.compile_seconds_saved += entry->forward_compile_seconds();
  return result;
}

std::optional<CompileResult> Cache::HitByRequestDigest(
    const std::string& request_digest) {
  std::string key;
  {
    absl::MutexLock lock(&memo_mu_);
    auto it = key_memo_.find(request_digest);
    if (it == key_memo_.end()) return std::nullopt;
    key = it->second;
  }
  std::optional<CompileResult> hit = TryHit(key);
  if (hit.has_value()) {
    absl::MutexLock lock(&mu_);
    ++counters_.memoized_hits;
  }
  return hit;
}

absl::StatusOr<CompileResult> Cache::Compile(const CompileRequest& request) {
  AOTCACHE_ASSIGN_OR_RETURN(Analyzed a, AnalyzeRequest(request));
  if (!a.bypass_reason.empty()) {
    if (std::shared_ptr<const Bypassed> memo = FindBypassed(a.key)) {
      absl::MutexLock lock(&mu_);
      ++counters_.bypasses;
      ++counters_.bypass_reasons["constants too large"];
      ++counters_.bypass_memo_hits;
      return memo->forward;
    }
    bool waited = false;
    absl::StatusOr<CompileResult> result = CompileOnce(
        a.key, [&] { return CompileAndStore(request, a); }, &waited);
    if (!result.ok()) return result;
    result->shared_compile = waited;
    RememberBypassed(*result);
    return result;
  }
  if (!request.request_digest.empty()) {
    absl::MutexLock lock(&memo_mu_);
    if (key_memo_.size() >= kMaxMemoizedKeys) key_memo_.clear();
    key_memo_.insert_or_assign(request.request_digest, a.key);
  }
  if (std::optional<CompileResult> hit = TryHit(a.key)) return *hit;
  bool waited = false;
  absl::StatusOr<CompileResult> result = CompileOnce(
      a.key, [&] { return CompileAndStore(request, a); }, &waited);
  if (result.ok()) result->shared_compile = waited;
  return result;
}

namespace {

// Whether another compile of the same graph would fail the same way (not a
// passing condition: the daemon stopping, a store or machine that is busy).
bool Repeats(const absl::Status& status) {
  return absl::IsInvalidArgument(status) || absl::IsInternal(status) ||
         absl::IsResourceExhausted(status) ||
         absl::IsDeadlineExceeded(status) || absl::IsFailedPrecondition(status);
}

}  // namespace

absl::StatusOr<CompileResult> Cache::CompileOnce(
    const std::string& key,
    absl::FunctionRef<absl::StatusOr<CompileResult>()> compile, bool* waited) {
  {
    absl::MutexLock lock(&failures_mu_);
    auto it = failures_.find(key);
    if (it != failures_.end()) {
      const absl::Duration ago = absl::Now() - it->second.when;
      if (ago < options_.failure_memory) {
        absl::Status remembered(
            it->second.status.code(),
            absl::StrCat(
                it->second.status.message(), " (remembered from ",
                absl::FormatDuration(absl::Trunc(ago, absl::Seconds(1))),
                " ago; not compiled again)"));
        absl::MutexLock counters_lock(&mu_);
        ++counters_.remembered_failures;
        return remembered;
      }
      failures_.erase(it);
    }
  }
  absl::StatusOr<CompileResult> result =
      forward_flights_.Do(key, compile, waited);
  if (!result.ok() && Repeats(result.status()) &&
      options_.failure_memory > absl::ZeroDuration()) {
    absl::MutexLock lock(&failures_mu_);
    if (failures_.size() >= kMaxRememberedFailures) failures_.clear();
    failures_[key] = Failure{result.status(), absl::Now()};
  }
  return result;
}

absl::StatusOr<BackwardResult> Cache::GetBackward(
    const std::string& key, const CompileRequest* request) {
  return backward_flights_.Do(key, [&]() -> absl::StatusOr<BackwardResult> {
    std::shared_ptr<const Bypassed> memo = FindBypassed(key);
    if (memo != nullptr && memo->backward.has_value()) {
      absl::MutexLock lock(&mu_);
      ++counters_.backward_hits;
      return *memo->backward;
    }
    // A bypassed key's artifacts are never stored: only the memo keeps them.
    std::string bypass_reason;
    absl::StatusOr<v1::CacheEntry> entry =
        store_ != nullptr ? store_->Lookup(key)
                          : absl::NotFoundError("no store");
    v1::Artifact forward;
    bool have_forward = false;
    if (!entry.ok()) {
      // Rebuild the entry from the request: deleted, evicted or never saved.
      if (request == nullptr) {
        return absl::NotFoundError(
            "no entry for this key; send the graph to rebuild it");
      }
      AOTCACHE_ASSIGN_OR_RETURN(Analyzed a, AnalyzeRequest(*request));
      if (a.key != key) {
        return absl::InvalidArgumentError(
            "the graph sent does not have this key");
      }
      if (a.analysis.mode != v1::MODE_TRAINING) {
        return absl::FailedPreconditionError(
            "an inference-mode function has no backward");
      }
      bypass_reason = a.bypass_reason;
      AOTCACHE_ASSIGN_OR_RETURN(CompilePlan plan, PlanCompilation(a.analysis));
      if (memo != nullptr &&
          forward.ParseFromString(memo->forward.forward_bytes)) {
        have_forward = true;  // The bypassed forward the memo holds.
      } else {
        AOTCACHE_ASSIGN_OR_RETURN(forward,
                                  CompileForward(plan, *backend_, a.target));
        have_forward = true;
      }
      v1::CacheEntry rebuilt;
      rebuilt.set_key(key);
      rebuilt.set_mode(a.analysis.mode);
      *rebuilt.mutable_metadata() = plan.metadata;
      *rebuilt.mutable_graph() = CanonicalGraph(a.analysis.graph);
      *rebuilt.mutable_options() = request->options;
      *rebuilt.mutable_target() = a.target;
      rebuilt.set_backend(std::string(backend_->name()));
      *rebuilt.mutable_backward_graph() = *plan.backward_graph;
      *rebuilt.mutable_backward_convention() = plan.backward_spec.convention;
      entry = std::move(rebuilt);
    }
    if (entry->mode() != v1::MODE_TRAINING) {
      return absl::FailedPreconditionError(
          "an inference-mode function has no backward");
    }
    if (!entry->backward_digest().empty()) {
      absl::StatusOr<std::string> bytes =
          store_->GetArtifact(entry->backward_digest());
      BackwardResult hit;
      if (bytes.ok() && hit.artifact.ParseFromString(*bytes)) {
        hit.stored_digest = entry->backward_digest();
        absl::MutexLock lock(&mu_);
        ++counters_.backward_hits;
        counters_.compile_seconds_saved += entry->backward_compile_seconds();
        return hit;
      }
    }
    std::vector<std::pair<std::string, std::string>> artifacts;
    if (!have_forward) {
      absl::StatusOr<std::string> bytes =
          store_->GetArtifact(entry->forward_digest());
      if (!bytes.ok() || !forward.ParseFromString(*bytes)) {
        // The forward is gone or corrupt: compile it again from the entry.
        CompileRequest from_entry{entry->graph(), entry->options(),
                                  entry->target(), /*request_digest=*/""};
        AOTCACHE_ASSIGN_OR_RETURN(Analyzed a, AnalyzeRequest(from_entry));
        AOTCACHE_ASSIGN_OR_RETURN(CompilePlan plan,
                                  PlanCompilation(a.analysis));
        AOTCACHE_ASSIGN_OR_RETURN(
            forward, CompileForward(plan, *backend_, entry->target()));
        have_forward = true;
      }
    }
    if (have_forward) {
      std::string bytes = DeterministicBytes(forward);
      entry->set_forward_digest(Sha256Hex(bytes));
      entry->set_forward_bytes(static_cast<int64_t>(bytes.size()));
      artifacts.emplace_back(entry->forward_digest(), std::move(bytes));
    }
    auto start = std::chrono::steady_clock::now();
    BackwardResult compiled;
    AOTCACHE_ASSIGN_OR_RETURN(
        compiled.artifact,
        CompileBackwardGraph(entry->backward_graph(),
                             entry->backward_convention(), forward, *backend_,
                             entry->target()));
    std::string bytes = DeterministicBytes(compiled.artifact);
    entry->set_backward_digest(Sha256Hex(bytes));
    entry->set_backward_bytes(static_cast<int64_t>(bytes.size()));
    entry->set_backward_compile_seconds(SecondsSince(start));
    artifacts.emplace_back(entry->backward_digest(), std::move(bytes));
    {
      absl::MutexLock lock(&mu_);
      ++counters_.backward_compiles;
    }
    if (!bypass_reason.empty()) {
      compiled.not_stored_reason = bypass_reason;
      RememberBypassedBackward(key, compiled);
      return compiled;
    }
    absl::Status saved = Save(*entry, artifacts);
    if (saved.ok()) {
      compiled.stored_digest = entry->backward_digest();
    } else {
      compiled.not_stored_reason = std::string(saved.message());
    }
    return compiled;
  });
}

std::shared_ptr<const Cache::Bypassed> Cache::FindBypassed(
    const std::string& key) {
  absl::MutexLock lock(&bypass_mu_);
  auto it = bypassed_.find(key);
  return it == bypassed_.end() ? nullptr : it->second;
}

// Puts `memo` under `key`, in place of any earlier one.
void Cache::PutBypassed(const std::string& key, Bypassed memo) {
  memo.bytes = static_cast<int64_t>(memo.forward.forward_bytes.size() +
                                    memo.forward.metadata_bytes.size());
  if (memo.backward.has_value()) {
    memo.bytes += static_cast<int64_t>(memo.backward->artifact.ByteSizeLong());
  }
  absl::MutexLock lock(&bypass_mu_);
  auto& slot = bypassed_[key];
  if (slot == nullptr) {
    bypass_order_.push_back(key);
  } else {
    bypass_bytes_ -= slot->bytes;
  }
  bypass_bytes_ += memo.bytes;
  slot = std::make_shared<const Bypassed>(std::move(memo));
  TrimBypassed();
}

void Cache::RememberBypassed(const CompileResult& forward) {
  Bypassed memo;
  memo.forward = forward;
  memo.forward.shared_compile = false;
  PutBypassed(forward.key, std::move(memo));
}

void Cache::RememberBypassedBackward(const std::string& key,
                                     const BackwardResult& backward) {
  std::shared_ptr<const Bypassed> old = FindBypassed(key);
  if (old == nullptr) return;  // Trimmed meanwhile: not kept.
  Bypassed memo = *old;
  memo.backward = backward;
  PutBypassed(key, std::move(memo));
}

void Cache::TrimBypassed() {
  while (bypass_bytes_ > options_.max_bypass_memo_bytes &&
         !bypass_order_.empty()) {
    auto it = bypassed_.find(bypass_order_.front());
    bypass_order_.pop_front();
    if (it == bypassed_.end()) continue;
    bypass_bytes_ -= it->second->bytes;
    bypassed_.erase(it);
  }
}

CacheCounters Cache::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

}  // namespace aotcache
