#include "client/cli/remote_session.h"

#include "absl/strings/str_cat.h"

namespace aotcache {

absl::Status RemoteSession::FetchArtifact(const std::string& digest,
                                          v1::Artifact* artifact) {
  absl::StatusOr<std::string> bytes = daemon_.FetchArtifact(digest);
  if (!bytes.ok()) return bytes.status();
  if (!artifact->ParseFromString(*bytes)) {
    return absl::DataLossError(
        absl::StrCat("artifact ", digest, " does not parse"));
  }
  return absl::OkStatus();
}

int RemoteSession::Fail(const grpc::Status& status) {
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    err_ << "aotcache: no daemon answers at " << daemon_.connection().server()
         << " (" << status.error_message()
         << "); start one with scripts/run or pass --server\n";
    return 3;
  }
  if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
      status.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
    err_ << "aotcache: " << status.error_message()
         << " (the token comes from $AOTCACHE_TOKEN)\n";
    return 1;
  }
  err_ << "aotcache: " << status.error_message() << "\n";
  return 1;
}

int RemoteSession::Fail(const absl::Status& status) {
  return Fail(grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                           std::string(status.message())));
}

}  // namespace aotcache
