#include "server/compile_service.h"

#include "core/graph/deterministic_bytes.h"
#include "core/key/digest.h"
#include "server/grpc_status.h"

namespace aotcache {
namespace {

CompileRequest FromProto(const v1::CompileRequest& r) {
  return CompileRequest{r.graph(), r.options(), r.target()};
}

v1::CompileStatus ToProto(ForwardStatus s) {
  switch (s) {
    case ForwardStatus::kHit:
      return v1::COMPILE_STATUS_HIT;
    case ForwardStatus::kMiss:
      return v1::COMPILE_STATUS_MISS;
    case ForwardStatus::kBypass:
      return v1::COMPILE_STATUS_BYPASS;
  }
  return v1::COMPILE_STATUS_UNSPECIFIED;
}

v1::BackwardState ToProto(BackwardState s) {
  switch (s) {
    case BackwardState::kNone:
      return v1::BACKWARD_STATE_NONE;
    case BackwardState::kPending:
      return v1::BACKWARD_STATE_PENDING;
    case BackwardState::kReady:
      return v1::BACKWARD_STATE_READY;
  }
  return v1::BACKWARD_STATE_UNSPECIFIED;
}

}  // namespace

grpc::Status CompileServiceImpl::Compile(grpc::ServerContext*,
                                         const v1::CompileRequest* request,
                                         v1::CompileResponse* response) {
  clock_->Touch();
  absl::StatusOr<CompileResult> r = cache_->Compile(FromProto(*request));
  if (!r.ok()) return ToGrpc(r.status());
  response->set_key(r->key);
  response->set_mode(r->mode);
  response->set_status(ToProto(r->status));
  response->set_bypass_reason(r->bypass_reason);
  response->set_backward(ToProto(r->backward));
  *response->mutable_metadata() = std::move(r->metadata);
  response->set_compile_seconds(r->compile_seconds);
  response->set_forward_digest(r->forward_digest);
  if (!request->artifacts_by_reference() || r->forward_digest.empty()) {
    *response->mutable_forward() = std::move(r->forward);
  }
  return grpc::Status::OK;
}

grpc::Status CompileServiceImpl::GetBackward(
    grpc::ServerContext*, const v1::GetBackwardRequest* request,
    v1::GetBackwardResponse* response) {
  clock_->Touch();
  CompileRequest rebuild;
  const CompileRequest* rebuild_ptr = nullptr;
  if (request->has_request()) {
    rebuild = FromProto(request->request());
    rebuild_ptr = &rebuild;
  }
  absl::StatusOr<v1::Artifact> bw =
      cache_->GetBackward(request->key(), rebuild_ptr);
  if (!bw.ok()) return ToGrpc(bw.status());
  response->set_backward_digest(Sha256Hex(DeterministicBytes(*bw)));
  if (!request->artifact_by_reference()) {
    *response->mutable_backward() = *std::move(bw);
  }
  return grpc::Status::OK;
}

grpc::Status CompileServiceImpl::FetchArtifact(
    grpc::ServerContext* context, const v1::FetchArtifactRequest* request,
    grpc::ServerWriter<v1::ArtifactChunk>* writer) {
  clock_->Touch();
  absl::StatusOr<std::string> bytes = store_->GetArtifact(request->digest());
  if (!bytes.ok()) return ToGrpc(bytes.status());
  constexpr size_t kChunkBytes = size_t{1} << 20;
  size_t offset = 0;
  do {
    if (context->IsCancelled()) return grpc::Status::CANCELLED;
    v1::ArtifactChunk chunk;
    if (offset == 0) chunk.set_total_bytes(static_cast<int64_t>(bytes->size()));
    chunk.set_data(bytes->substr(offset, kChunkBytes));
    offset += kChunkBytes;
    if (!writer->Write(chunk)) return grpc::Status::CANCELLED;
  } while (offset < bytes->size());
  return grpc::Status::OK;
}

grpc::Status CompileServiceImpl::Lookup(grpc::ServerContext*,
                                        const v1::LookupRequest* request,
                                        v1::LookupResponse* response) {
  clock_->Touch();
  absl::StatusOr<v1::CacheEntry> entry = store_->Lookup(request->key());
  if (!entry.ok()) return ToGrpc(entry.status());
  *response->mutable_entry() = *std::move(entry);
  return grpc::Status::OK;
}

}  // namespace aotcache
