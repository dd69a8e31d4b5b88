#include "server/compile_service.h"

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
  *response->mutable_forward() = std::move(r->forward);
  response->set_compile_seconds(r->compile_seconds);
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
  *response->mutable_backward() = *std::move(bw);
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
