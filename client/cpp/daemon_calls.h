// DaemonCalls: a daemon's RPCs as every aotcache client makes them. Each
// unary call gets the connection's credentials and a deadline, and is tried
// again with doubling backoff when the daemon answers UNAVAILABLE (never on
// another code: a call that reached the daemon may have done its work). An
// artifact fetched is checked against its digest before anyone sees it.
// aotcache::Client makes its calls through one, and so does the CLI
// (Client::daemon()).
// Thread-safety: thread-safe.
#ifndef AOTCACHE_CLIENT_CPP_DAEMON_CALLS_H_
#define AOTCACHE_CLIENT_CPP_DAEMON_CALLS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "client/cpp/connection.h"
#include "grpcpp/client_context.h"

namespace aotcache {

struct CallPolicy {
  absl::Duration deadline = absl::Seconds(60);              // Per attempt.
  int max_attempts = 4;                                     // UNAVAILABLE only.
  absl::Duration initial_backoff = absl::Milliseconds(50);  // Doubles.
};

// A gRPC status as an absl one (the codes are the same numbers).
absl::Status FromGrpc(const grpc::Status& status);

class DaemonCalls {
 public:
  using Rpc = std::function<grpc::Status(grpc::ClientContext*)>;

  DaemonCalls(Connection connection, CallPolicy policy);

  // Runs `rpc` with a fresh context per attempt, each with `deadline` (the
  // policy's when not given).
  grpc::Status Unary(const Rpc& rpc) const;
  grpc::Status Unary(absl::Duration deadline, const Rpc& rpc) const;
  // A context for one streaming call, which is never tried again (part of
  // the stream may have been used).
  std::unique_ptr<grpc::ClientContext> StreamContext(
      absl::Duration deadline) const;

  // The artifact `digest` names, as the daemon stores it (a serialized
  // v1::Artifact): DataLoss when other bytes arrive.
  absl::StatusOr<std::string> FetchArtifact(const std::string& digest) const;

  v1::CompileService::Stub& compile() const { return *compile_; }
  v1::AdminService::Stub& admin() const { return *admin_; }
  const Connection& connection() const { return connection_; }
  // Attempts made again after UNAVAILABLE, since construction.
  int64_t unavailable_retries() const { return retries_.load(); }

 private:
  const Connection connection_;
  const CallPolicy policy_;
  const std::unique_ptr<v1::CompileService::Stub> compile_;
  const std::unique_ptr<v1::AdminService::Stub> admin_;
  mutable std::atomic<int64_t> retries_{0};
};

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CPP_DAEMON_CALLS_H_
