#include "client/cpp/daemon_calls.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/key/digest.h"

namespace aotcache {

absl::Status FromGrpc(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

DaemonCalls::DaemonCalls(Connection connection, CallPolicy policy)
    : connection_(std::move(connection)),
      policy_(policy),
      compile_(v1::CompileService::NewStub(connection_.channel())),
      admin_(v1::AdminService::NewStub(connection_.channel())) {}

grpc::Status DaemonCalls::Unary(const Rpc& rpc) const {
  return Unary(policy_.deadline, rpc);
}

grpc::Status DaemonCalls::Unary(absl::Duration deadline, const Rpc& rpc) const {
  absl::Duration backoff = policy_.initial_backoff;
  for (int attempt = 1;; ++attempt) {
    grpc::ClientContext context;
    connection_.Prepare(&context, deadline);
    grpc::Status status = rpc(&context);
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE ||
        attempt >= policy_.max_attempts) {
      return status;
    }
    retries_.fetch_add(1);
    absl::SleepFor(backoff);
    backoff *= 2;
  }
}

std::unique_ptr<grpc::ClientContext> DaemonCalls::StreamContext(
    absl::Duration deadline) const {
  auto context = std::make_unique<grpc::ClientContext>();
  connection_.Prepare(context.get(), deadline);
  return context;
}

absl::StatusOr<std::string> DaemonCalls::FetchArtifact(
    const std::string& digest) const {
  v1::FetchArtifactRequest request;
  request.set_digest(digest);
  std::string bytes;
  grpc::Status status = Unary([&](grpc::ClientContext* context) {
    bytes.clear();
    auto reader = compile_->FetchArtifact(context, request);
    v1::ArtifactChunk chunk;
    while (reader->Read(&chunk)) {
      if (chunk.total_bytes() > 0) bytes.reserve(chunk.total_bytes());
      bytes += chunk.data();
    }
    return reader->Finish();
  });
  if (!status.ok()) return FromGrpc(status);
  if (Sha256Hex(bytes) != digest) {
    return absl::DataLossError(
        absl::StrCat("artifact ", digest, " arrived with other bytes"));
  }
  return bytes;
}

}  // namespace aotcache
