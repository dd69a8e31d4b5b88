// RemoteSession: what every `aotcache` command that talks to a daemon
// shares -- the parsed invocation (RemoteInvocation), the connection and its
// stubs, call contexts with the connection's credentials and a deadline,
// and how a failed call is told (exit codes: 1 refused or failed, 2 bad
// usage, 3 no daemon answers).
// Thread-safety: one thread.
#ifndef AOTCACHE_CLIENT_CLI_REMOTE_SESSION_H_
#define AOTCACHE_CLIENT_CLI_REMOTE_SESSION_H_

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "client/cpp/connection.h"
#include "grpcpp/client_context.h"

namespace aotcache {

struct RemoteInvocation {
  std::string server;
  bool json = false;
  bool backward = false;   // compile: fetch the backward too.
  bool source = false;     // show: print the native kernels' source.
  std::string older_than;  // evict: an age (7d).
  std::string to_size;     // evict: a size (20G).
  std::string to;          // export: the file to write.
  std::string prefix;      // export: a key prefix in hex.
  double interval = 2;     // top: seconds between lines.
  int64_t count = -1;      // top: lines to print; negative: until killed.
  std::vector<std::string> positional;
};

class RemoteSession {
 public:
  RemoteSession(Connection connection, std::ostream& out, std::ostream& err)
      : connection_(std::move(connection)),
        target_(connection_.server()),
        out_(out),
        err_(err),
        compile_(v1::CompileService::NewStub(connection_.channel())),
        admin_(v1::AdminService::NewStub(connection_.channel())) {}

  // A context with the connection's credentials and a deadline.
  std::unique_ptr<grpc::ClientContext> Context(int seconds);
  // Reports bad usage (exit code 2).
  int Usage(const absl::Status& status);
  // Reports a failed call; returns the exit code.
  int Fail(const grpc::Status& status);

  std::ostream& out() { return out_; }
  std::ostream& err() { return err_; }
  v1::AdminService::Stub& admin() { return *admin_; }

 protected:
  const Connection connection_;
  const std::string target_;
  std::ostream& out_;
  std::ostream& err_;
  std::unique_ptr<v1::CompileService::Stub> compile_;
  std::unique_ptr<v1::AdminService::Stub> admin_;
};

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CLI_REMOTE_SESSION_H_
