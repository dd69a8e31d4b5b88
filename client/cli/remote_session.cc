#include "client/cli/remote_session.h"

#include "absl/time/time.h"

namespace aotcache {

std::unique_ptr<grpc::ClientContext> RemoteSession::Context(int seconds) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  connection_.Prepare(ctx.get(), absl::Seconds(seconds));
  return ctx;
}

int RemoteSession::Usage(const absl::Status& status) {
  err_ << "aotcache: " << status.message() << "\n";
  return 2;
}

int RemoteSession::Fail(const grpc::Status& status) {
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    err_ << "aotcache: no daemon answers at " << target_ << " ("
         << status.error_message()
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

}  // namespace aotcache
