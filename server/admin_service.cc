#include "server/admin_service.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "server/grpc_status.h"

namespace aotcache {

grpc::Status AdminServiceImpl::Stats(grpc::ServerContext* context,
                                     const v1::StatsRequest*,
                                     v1::StatsResponse* response) {
  clock_->Touch();
  if (grpc::Status allowed = access_->Check(*context, Scope::kAdmin, "Stats");
      !allowed.ok()) {
    return allowed;
  }
  CacheCounters c = cache_->counters();
  response->set_hits(c.hits);
  response->set_misses(c.misses);
  response->set_bypasses(c.bypasses);
  for (const auto& [reason, n] : c.bypass_reasons) {
    (*response->mutable_bypass_reasons())[reason] = n;
  }
  response->set_saves(c.saves);
  response->set_save_failures(c.save_failures);
  response->set_backward_compiles(c.backward_compiles);
  response->set_backward_hits(c.backward_hits);
  response->set_bytes_stored(c.bytes_stored);
  response->set_compile_seconds_saved(c.compile_seconds_saved);
  response->set_corrupt_artifacts(c.corrupt_artifacts);
  response->set_memoized_hits(c.memoized_hits);
  response->set_store_write_problem(store_->WriteProblem());
  response->set_remembered_failures(c.remembered_failures);
  response->set_bypass_memo_hits(c.bypass_memo_hits);
  response->set_store_recovery_damage(store_->recovery_damage());
  response->set_misses_not_compiled(c.misses_not_compiled);
  const RocksDbStore::CompressionCounters written = store_->compression();
  response->set_artifact_bytes_written(written.artifact_bytes);
  response->set_artifact_bytes_at_rest(written.stored_bytes);
  const RocksDbStore::Usage usage = store_->usage();
  response->set_store_bytes(usage.bytes);
  response->set_store_entries(usage.entries);
  response->set_max_size(janitor_->limits().max_bytes);
  response->set_max_size_hard_limit(store_->hard_limit_bytes());
  const EvictionCounters evicted = janitor_->counters();
  response->set_evicted_entries(evicted.entries);
  response->set_evicted_bytes(evicted.bytes);
  response->set_eviction_sweeps(evicted.sweeps);
  return grpc::Status::OK;
}

grpc::Status AdminServiceImpl::ListEntries(
    grpc::ServerContext* context, const v1::ListEntriesRequest* request,
    v1::ListEntriesResponse* response) {
  clock_->Touch();
  if (grpc::Status allowed =
          access_->Check(*context, Scope::kAdmin, "ListEntries");
      !allowed.ok()) {
    return allowed;
  }
  // Capped: one page is held in memory whole.
  constexpr int kMaxPageSize = 1000;
  int page_size = request->page_size() > 0 ? request->page_size() : 100;
  page_size = std::min(page_size, kMaxPageSize);
  absl::StatusOr<RocksDbStore::Page> page =
      store_->List(request->page_token(), page_size);
  if (!page.ok()) return ToGrpc(page.status());
  for (const v1::CacheEntry& e : page->entries) {
    v1::EntrySummary* s = response->add_entries();
    s->set_key(e.key());
    s->set_mode(e.mode());
    s->set_forward_digest(e.forward_digest());
    s->set_backward_digest(e.backward_digest());
    s->set_forward_bytes(e.forward_bytes());
    s->set_backward_bytes(e.backward_bytes());
    absl::StatusOr<RocksDbStore::Access> access = store_->GetAccess(e.key());
    if (access.ok()) {
      s->set_hits(access->hits);
      s->set_last_access_micros(access->last_access_micros);
    }
  }
  response->set_next_page_token(page->next_page_token);
  response->set_unreadable(page->unreadable);
  return grpc::Status::OK;
}

grpc::Status AdminServiceImpl::GetEntry(grpc::ServerContext* context,
                                        const v1::GetEntryRequest* request,
                                        v1::LookupResponse* response) {
  clock_->Touch();
  if (grpc::Status allowed =
          access_->Check(*context, Scope::kAdmin, "GetEntry");
      !allowed.ok()) {
    return allowed;
  }
  absl::StatusOr<v1::CacheEntry> entry = store_->Lookup(request->key());
  if (!entry.ok()) return ToGrpc(entry.status());
  *response->mutable_entry() = *std::move(entry);
  return grpc::Status::OK;
}

grpc::Status AdminServiceImpl::DeleteEntry(
    grpc::ServerContext* context, const v1::DeleteEntryRequest* request,
    v1::DeleteEntryResponse*) {
  clock_->Touch();
  if (grpc::Status allowed =
          access_->Check(*context, Scope::kAdmin, "DeleteEntry");
      !allowed.ok()) {
    return allowed;
  }
  return ToGrpc(store_->Delete(request->key()));
}

grpc::Status AdminServiceImpl::Verify(grpc::ServerContext* context,
                                      const v1::VerifyRequest*,
                                      v1::VerifyResponse* response) {
  clock_->Touch();
  if (grpc::Status allowed = access_->Check(*context, Scope::kAdmin, "Verify");
      !allowed.ok()) {
    return allowed;
  }
  absl::StatusOr<RocksDbStore::VerifyReport> report = store_->Verify();
  if (!report.ok()) return ToGrpc(report.status());
  response->set_checked(report->checked);
  for (const std::string& d : report->corrupt) response->add_corrupt(d);
  response->set_checked_entries(report->checked_entries);
  for (const std::string& key : report->corrupt_entries) {
    response->add_corrupt_entries(absl::BytesToHexString(key));
  }
  response->set_recovery_damage(report->recovery_damage);
  return grpc::Status::OK;
}

grpc::Status AdminServiceImpl::Evict(grpc::ServerContext* context,
                                     const v1::EvictRequest* request,
                                     v1::EvictResponse* response) {
  clock_->Touch();
  if (grpc::Status allowed = access_->Check(*context, Scope::kAdmin, "Evict");
      !allowed.ok()) {
    return allowed;
  }
  EvictionGoal goal;
  if (request->has_to_bytes()) {
    if (request->to_bytes() < 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "to_bytes must not be negative");
    }
    goal.to_bytes = request->to_bytes();
  }
  if (request->has_older_than_seconds()) {
    if (request->older_than_seconds() < 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "older_than_seconds must not be negative");
    }
    const int64_t now = store_->NowMicros();
    goal.used_before_micros =
        now - std::min(request->older_than_seconds(), now / 1000000) * 1000000;
  }
  if (!request->has_to_bytes() && !request->has_older_than_seconds()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "set to_bytes or older_than_seconds");
  }
  absl::StatusOr<EvictionReport> report = janitor_->Evict(goal);
  if (!report.ok()) return ToGrpc(report.status());
  response->set_entries(report->entries);
  response->set_bytes(report->bytes);
  response->set_spared(report->spared);
  const RocksDbStore::Usage usage = store_->usage();
  response->set_store_bytes(usage.bytes);
  response->set_store_entries(usage.entries);
  return grpc::Status::OK;
}

}  // namespace aotcache
