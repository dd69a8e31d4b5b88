#include "core/cache/cache.h"

#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/analysis/analyze.h"
#include "core/graph/canonical_graph.h"
#include "core/graph/deterministic_bytes.h"
#include "core/key/digest.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

constexpr char kConstantsTooLarge[] = "constants too large";

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

absl::Status NoBackwardForInference() {
  return absl::FailedPreconditionError(
      "an inference-mode function has no backward");
}

}  // namespace

// Points into the request's graph: the request must outlive it.
struct Cache::Analyzed {
  Analysis analysis;
  v1::Target target;  // The backend's ArtifactTarget: key material.
  std::string key;
  std::string bypass_reason;
};

// An entry whose backward is to be compiled, and what is known beside it.
struct Cache::BackwardEntry {
  v1::CacheEntry entry;
  // The forward, when the entry was rebuilt (it is stored with the
  // backward); else the stored one is read.
  std::optional<v1::Artifact> forward;
  std::string bypass_reason;  // Non-empty: never stored, kept in the memo.
};

Cache::Cache(EntryStore* store, const Backend* backend, CacheOptions options)
    : store_(store),
      backend_(backend),
      options_(std::move(options)),
      failures_(options_.failure_memory, options_.clock),
      bypass_memo_(options_.max_bypass_memo_bytes) {}

// --- Compile ---------------------------------------------------------------

absl::StatusOr<CompileResult> Cache::Compile(const CompileRequest& request,
                                             OnMiss on_miss) {
  AOTCACHE_ASSIGN_OR_RETURN(Analyzed a, AnalyzeRequest(request));
  if (!a.bypass_reason.empty()) {
    if (std::shared_ptr<const BypassMemo::Entry> memo =
            bypass_memo_.Find(a.key)) {
      Count([](CacheCounters& c) {
        ++c.bypasses;
        ++c.bypass_reasons[kConstantsTooLarge];
        ++c.bypass_memo_hits;
      });
      return memo->forward;
    }
  } else {
    if (!request.request_digest.empty()) {
      request_keys_.Remember(request.request_digest, a.key);
    }
    if (std::optional<CompileResult> hit = TryHit(a.key)) return *hit;
  }
  if (on_miss == OnMiss::kNotFound) {
    Count([](CacheCounters& c) { ++c.misses_not_compiled; });
    return absl::NotFoundError(
        "not cached, and this request may not compile it");
  }
  bool waited = false;
  absl::StatusOr<CompileResult> result = CompileOnce(
      a.key, [&] { return CompileAndStore(request, a); }, &waited);
  if (!result.ok()) return result;
  result->shared_compile = waited;
  if (result->status == ForwardStatus::kBypass)
    bypass_memo_.PutForward(*result);
  return result;
}

std::optional<CompileResult> Cache::HitByRequestDigest(
    const std::string& request_digest, HitBytes bytes) {
  std::optional<std::string> key = request_keys_.Find(request_digest);
  if (!key.has_value()) return std::nullopt;
  std::optional<CompileResult> hit = TryHit(*key, bytes);
  if (hit.has_value()) Count([](CacheCounters& c) { ++c.memoized_hits; });
  return hit;
}

absl::StatusOr<std::string> Cache::KeyOf(const v1::CacheEntry& entry) const {
  CompileRequest request;
  request.graph = entry.graph();
  request.options = entry.options();
  request.target = entry.target();
  AOTCACHE_ASSIGN_OR_RETURN(Analyzed a, AnalyzeRequest(request));
  return a.key;
}

absl::StatusOr<Cache::Analyzed> Cache::AnalyzeRequest(
    const CompileRequest& request) const {
  Analyzed a;
  // Before anything is remembered: a bogus target is the request's fault.
  AOTCACHE_ASSIGN_OR_RETURN(
      KeyContext context,
      KeyContextFor(*backend_, request.target, options_.pipeline_version));
  a.target = context.target;
  AOTCACHE_ASSIGN_OR_RETURN(
      a.analysis, Analyze(request.graph, request.options, options_.limits));
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

absl::StatusOr<std::pair<CompilePlan, v1::Artifact>>
Cache::PlanAndCompileForward(const Analyzed& a) const {
  AOTCACHE_ASSIGN_OR_RETURN(CompilePlan plan, PlanCompilation(a.analysis));
  AOTCACHE_ASSIGN_OR_RETURN(v1::Artifact forward,
                            CompileForward(plan, *backend_, a.target));
  return std::make_pair(std::move(plan), std::move(forward));
}

v1::CacheEntry Cache::EntryOf(const Analyzed& a, const CompilePlan& plan,
                              const v1::CompileOptions& options) const {
  v1::CacheEntry entry;
  entry.set_key(a.key);
  entry.set_mode(a.analysis.mode);
  *entry.mutable_metadata() = plan.metadata;
  *entry.mutable_graph() = CanonicalGraph(a.analysis.graph);
  *entry.mutable_options() = options;
  *entry.mutable_target() = a.target;
  entry.set_backend(std::string(backend_->name()));
  if (plan.backward_graph.has_value()) {
    *entry.mutable_backward_graph() = *plan.backward_graph;
    *entry.mutable_backward_convention() = plan.backward_spec.convention;
  }
  return entry;
}

absl::StatusOr<CompileResult> Cache::CompileAndStore(
    const CompileRequest& request, const Analyzed& a) {
  const absl::Time start = options_.clock();
  AOTCACHE_ASSIGN_OR_RETURN(auto compiled, PlanAndCompileForward(a));
  const auto& [plan, forward] = compiled;
  CompileResult result;
  result.key = a.key;
  result.mode = a.analysis.mode;
  result.metadata_bytes = DeterministicBytes(plan.metadata);
  result.forward_bytes = DeterministicBytes(forward);
  result.compile_seconds = SecondsSince(start);
  if (!a.bypass_reason.empty()) {
    result.status = ForwardStatus::kBypass;
    result.bypass_reason = a.bypass_reason;
    Count([](CacheCounters& c) {
      ++c.bypasses;
      ++c.bypass_reasons[kConstantsTooLarge];
    });
    return result;
  }
  result.status = ForwardStatus::kMiss;
  result.backward = a.analysis.mode == v1::MODE_TRAINING
                        ? BackwardState::kPending
                        : BackwardState::kNone;
  v1::CacheEntry entry = EntryOf(a, plan, request.options);
  const std::string& bytes = result.forward_bytes;
  entry.set_forward_digest(Sha256Hex(bytes));
  entry.set_forward_bytes(static_cast<int64_t>(bytes.size()));
  entry.set_forward_compile_seconds(result.compile_seconds);
  result.forward_digest = entry.forward_digest();
  // Persisted before the answer leaves.
  absl::Status saved = Save(entry, {{entry.forward_digest(), bytes}});
  if (IsCacheFull(saved)) {
    // Past the store's hard limit: answered, not stored, as a bypass.
    result.status = ForwardStatus::kBypass;
    result.bypass_reason = kCacheFull;
    result.backward = BackwardState::kNone;
    result.forward_digest.clear();
    Count([](CacheCounters& c) {
      ++c.bypasses;
      ++c.bypass_reasons[kCacheFull];
    });
    return result;
  }
  Count([](CacheCounters& c) { ++c.misses; });
  if (!saved.ok()) {
    result.forward_digest.clear();  // Not stored: answered inline.
    result.not_stored_reason = std::string(saved.message());
  }
  return result;
}

absl::StatusOr<CompileResult> Cache::CompileOnce(
    const std::string& key,
    absl::FunctionRef<absl::StatusOr<CompileResult>()> compile, bool* waited) {
  if (std::optional<absl::Status> remembered = failures_.Recall(key)) {
    Count([](CacheCounters& c) { ++c.remembered_failures; });
    return *remembered;
  }
  absl::StatusOr<CompileResult> result =
      forward_flights_.Do(key, compile, waited);
  if (!result.ok()) failures_.Remember(key, result.status());
  return result;
}

std::optional<CompileResult> Cache::TryHit(const std::string& key,
                                           HitBytes want) {
  if (store_ == nullptr) return std::nullopt;
  absl::StatusOr<v1::CacheEntryHeader> entry = store_->LookupHeader(key);
  if (!entry.ok()) return std::nullopt;
  absl::StatusOr<std::string> bytes;
  if (want == HitBytes::kInline) {
    bytes = store_->GetArtifact(entry->forward_digest());
  } else if (store_->HasArtifact(entry->forward_digest())) {
    bytes = std::string();
  } else {
    bytes = absl::NotFoundError("no artifact");
  }
  if (!bytes.ok()) {
    if (absl::IsDataLoss(bytes.status())) {
      Warn(absl::StrCat("artifact ", entry->forward_digest(),
                        " is corrupt: dropped, recompiling"));
      // Never served: recompiled instead.
      Count([](CacheCounters& c) { ++c.corrupt_artifacts; });
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
  Count([&](CacheCounters& c) {
    ++c.hits;
    c.compile_seconds_saved += result.compile_seconds;
  });
  return result;
}

// --- GetBackward -----------------------------------------------------------

absl::StatusOr<BackwardResult> Cache::GetBackward(const std::string& key,
                                                  const CompileRequest* request,
                                                  OnMiss on_miss) {
  // Not in a flight: a caller who may not compile must not answer for one
  // who may and waits on it.
  if (on_miss == OnMiss::kNotFound) return BackwardCompiledBefore(key);
  return backward_flights_.Do(key, [&] { return BuildBackward(key, request); });
}

absl::StatusOr<BackwardResult> Cache::BackwardCompiledBefore(
    const std::string& key) {
  std::shared_ptr<const BypassMemo::Entry> memo = bypass_memo_.Find(key);
  if (memo != nullptr && memo->backward.has_value()) {
    Count([](CacheCounters& c) { ++c.backward_hits; });
    return *memo->backward;
  }
  if (store_ != nullptr) {
    if (absl::StatusOr<v1::CacheEntry> entry = store_->Lookup(key);
        entry.ok()) {
      if (entry->mode() != v1::MODE_TRAINING) return NoBackwardForInference();
      if (std::optional<BackwardResult> hit = StoredBackward(*entry)) {
        return *hit;
      }
    }
  }
  Count([](CacheCounters& c) { ++c.misses_not_compiled; });
  return absl::NotFoundError(
      "no backward compiled for this key, and this request may not compile "
      "it");
}

absl::StatusOr<BackwardResult> Cache::BuildBackward(
    const std::string& key, const CompileRequest* request) {
  // 1. A bypassed key's backward, compiled before: from the memo.
  std::shared_ptr<const BypassMemo::Entry> memo = bypass_memo_.Find(key);
  if (memo != nullptr && memo->backward.has_value()) {
    Count([](CacheCounters& c) { ++c.backward_hits; });
    return *memo->backward;
  }
  // 2. The entry, stored or rebuilt; its stored backward if it has one.
  AOTCACHE_ASSIGN_OR_RETURN(BackwardEntry b,
                            EntryForBackward(key, request, memo.get()));
  v1::CacheEntry& entry = b.entry;
  if (entry.mode() != v1::MODE_TRAINING) return NoBackwardForInference();
  if (std::optional<BackwardResult> hit = StoredBackward(entry)) return *hit;
  // 3. The forward it pairs with: stored, else compiled again from the
  // entry, and then stored with the backward.
  bool store_forward = b.forward.has_value();
  if (!b.forward.has_value()) b.forward = StoredForward(entry);
  if (!b.forward.has_value()) {
    CompileRequest from_entry{entry.graph(), entry.options(), entry.target(),
                              /*request_digest=*/""};
    AOTCACHE_ASSIGN_OR_RETURN(Analyzed a, AnalyzeRequest(from_entry));
    AOTCACHE_ASSIGN_OR_RETURN(auto compiled, PlanAndCompileForward(a));
    b.forward = std::move(compiled.second);
    store_forward = true;
  }
  std::vector<std::pair<std::string, std::string>> artifacts;
  if (store_forward) {
    std::string bytes = DeterministicBytes(*b.forward);
    entry.set_forward_digest(Sha256Hex(bytes));
    entry.set_forward_bytes(static_cast<int64_t>(bytes.size()));
    artifacts.emplace_back(entry.forward_digest(), std::move(bytes));
  }
  // 4. The backward, compiled.
  const absl::Time start = options_.clock();
  BackwardResult compiled;
  AOTCACHE_ASSIGN_OR_RETURN(
      compiled.artifact,
      CompileBackwardGraph(entry.backward_graph(), entry.backward_convention(),
                           *b.forward, *backend_, entry.target()));
  std::string bytes = DeterministicBytes(compiled.artifact);
  entry.set_backward_digest(Sha256Hex(bytes));
  entry.set_backward_bytes(static_cast<int64_t>(bytes.size()));
  entry.set_backward_compile_seconds(SecondsSince(start));
  artifacts.emplace_back(entry.backward_digest(), std::move(bytes));
  Count([](CacheCounters& c) { ++c.backward_compiles; });
  // 5. Kept: in the memo for a bypassed key, else stored.
  if (!b.bypass_reason.empty()) {
    compiled.not_stored_reason = b.bypass_reason;
    bypass_memo_.PutBackward(key, compiled);
    return compiled;
  }
  absl::Status saved = Save(entry, artifacts);
  if (saved.ok()) {
    compiled.stored_digest = entry.backward_digest();
  } else {
    compiled.not_stored_reason = std::string(saved.message());
  }
  return compiled;
}

absl::StatusOr<Cache::BackwardEntry> Cache::EntryForBackward(
    const std::string& key, const CompileRequest* request,
    const BypassMemo::Entry* memo) {
  BackwardEntry b;
  absl::StatusOr<v1::CacheEntry> stored =
      store_ != nullptr ? store_->Lookup(key) : absl::NotFoundError("no store");
  if (stored.ok()) {
    b.entry = *std::move(stored);
    return b;
  }
  if (request == nullptr) {
    return absl::NotFoundError(
        "no entry for this key; send the graph to rebuild it");
  }
  AOTCACHE_ASSIGN_OR_RETURN(Analyzed a, AnalyzeRequest(*request));
  if (a.key != key) {
    return absl::InvalidArgumentError("the graph sent does not have this key");
  }
  if (a.analysis.mode != v1::MODE_TRAINING) return NoBackwardForInference();
  b.bypass_reason = a.bypass_reason;
  v1::Artifact forward;
  if (memo != nullptr && forward.ParseFromString(memo->forward.forward_bytes)) {
    // The bypassed forward the memo holds: the backward pairs with it.
    AOTCACHE_ASSIGN_OR_RETURN(CompilePlan plan, PlanCompilation(a.analysis));
    b.entry = EntryOf(a, plan, request->options);
    b.forward = std::move(forward);
    return b;
  }
  AOTCACHE_ASSIGN_OR_RETURN(auto compiled, PlanAndCompileForward(a));
  b.entry = EntryOf(a, compiled.first, request->options);
  b.forward = std::move(compiled.second);
  return b;
}

std::optional<BackwardResult> Cache::StoredBackward(
    const v1::CacheEntry& entry) {
  if (entry.backward_digest().empty() || store_ == nullptr) return std::nullopt;
  absl::StatusOr<std::string> bytes =
      store_->GetArtifact(entry.backward_digest());
  BackwardResult hit;
  if (!bytes.ok() || !hit.artifact.ParseFromString(*bytes)) {
    return std::nullopt;
  }
  hit.stored_digest = entry.backward_digest();
  Count([&](CacheCounters& c) {
    ++c.backward_hits;
    c.compile_seconds_saved += entry.backward_compile_seconds();
  });
  return hit;
}

std::optional<v1::Artifact> Cache::StoredForward(const v1::CacheEntry& entry) {
  if (entry.forward_digest().empty() || store_ == nullptr) return std::nullopt;
  absl::StatusOr<std::string> bytes =
      store_->GetArtifact(entry.forward_digest());
  v1::Artifact forward;
  if (!bytes.ok() || !forward.ParseFromString(*bytes)) return std::nullopt;
  return forward;
}

// --- Bookkeeping -----------------------------------------------------------

absl::Status Cache::Save(
    const v1::CacheEntry& entry,
    const std::vector<std::pair<std::string, std::string>>& artifacts) {
  absl::Status st = store_ == nullptr ? absl::UnavailableError("no store")
                                      : store_->Put(entry, artifacts);
  if (IsCacheFull(st)) return st;  // Counted by the caller, not a fault.
  if (!st.ok()) {
    Warn(absl::StrCat("entry ", absl::BytesToHexString(entry.key()),
                      " not saved (answered anyway): ", st.ToString()));
    Count([](CacheCounters& c) { ++c.save_failures; });
    return st;
  }
  Count([&](CacheCounters& c) {
    ++c.saves;
    for (const auto& [digest, bytes] : artifacts)
      c.bytes_stored += bytes.size();
  });
  return absl::OkStatus();
}

void Cache::Count(absl::FunctionRef<void(CacheCounters&)> update) {
  absl::MutexLock lock(&mu_);
  update(counters_);
}

void Cache::Warn(const std::string& message) const {
  if (options_.on_warning) options_.on_warning(message);
}

double Cache::SecondsSince(absl::Time start) const {
  return absl::ToDoubleSeconds(options_.clock() - start);
}

CacheCounters Cache::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

}  // namespace aotcache
