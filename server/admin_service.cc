#include "server/admin_service.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "core/store/store_export.h"
#include "server/grpc_status.h"
#include "server/stats_snapshot.h"

namespace aotcache {

grpc::Status AdminServiceImpl::Stats(grpc::ServerContext* context,
                                     const v1::StatsRequest*,
                                     v1::StatsResponse* response) {
  clock_->Touch();
  if (grpc::Status allowed = access_->Check(*context, Scope::kAdmin, "Stats");
      !allowed.ok()) {
    return allowed;
  }
  *response = StatsSnapshot(*cache_, *store_, *janitor_);
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

grpc::Status AdminServiceImpl::Export(
    grpc::ServerContext* context, const v1::ExportRequest* request,
    grpc::ServerWriter<v1::ExportChunk>* writer) {
  clock_->Touch();
  if (grpc::Status allowed = access_->Check(*context, Scope::kAdmin, "Export");
      !allowed.ok()) {
    return allowed;
  }
  constexpr size_t kChunkBytes = size_t{1} << 20;
  v1::ExportChunk chunk;
  auto flush = [&]() -> absl::Status {
    if (chunk.data().empty()) return absl::OkStatus();
    if (!writer->Write(chunk)) {
      return absl::CancelledError("the client stopped reading the export");
    }
    chunk.clear_data();
    return absl::OkStatus();
  };
  ExportWriter stream([&](absl::string_view bytes) -> absl::Status {
    chunk.mutable_data()->append(bytes.data(), bytes.size());
    return chunk.data().size() >= kChunkBytes ? flush() : absl::OkStatus();
  });
  absl::StatusOr<ExportCounts> exported =
      ExportStore(*store_, request->key_prefix(), stream);
  if (!exported.ok()) return ToGrpc(exported.status());
  return ToGrpc(flush());
}

grpc::Status AdminServiceImpl::Import(
    grpc::ServerContext* context, grpc::ServerReader<v1::ImportChunk>* reader,
    v1::ImportResponse* response) {
  clock_->Touch();
  if (grpc::Status allowed = access_->Check(*context, Scope::kAdmin, "Import");
      !allowed.ok()) {
    return allowed;
  }
  StoreImporter importer(store_, [this](const v1::CacheEntry& entry) {
    return cache_->KeyOf(entry);
  });
  ExportReader stream(importer.Handlers());
  v1::ImportChunk chunk;
  absl::Status read;
  while (read.ok() && reader->Read(&chunk)) read = stream.Feed(chunk.data());
  if (read.ok()) read = stream.Finish();
  if (!read.ok()) {
    // Each entry before the bad record was written whole, with its
    // artifacts; none after it.
    return ToGrpc(absl::Status(
        read.code(), absl::StrCat(read.message(), " (", importer.imported(),
                                  " entries before it were imported)")));
  }
  response->set_entries(importer.imported());
  response->set_present(importer.present());
  response->set_artifacts(stream.artifacts());
  response->set_refused(importer.refused());
  response->set_refused_reason(importer.refused_reason());
  return grpc::Status::OK;
}

}  // namespace aotcache
