// RemoteSession: what every `aotcache` command that talks to a daemon
// shares -- the invocation (RemoteInvocation, from the flags), the daemon's
// calls (DaemonCalls, from an aotcache::Client: its credentials, deadlines,
// retries and digest checks), and how a failed call is told (exit codes: 1
// refused or failed, 2 bad usage, 3 no daemon answers).
// Thread-safety: one thread.
#ifndef AOTCACHE_CLIENT_CLI_REMOTE_SESSION_H_
#define AOTCACHE_CLIENT_CLI_REMOTE_SESSION_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/cpp/daemon_calls.h"

namespace aotcache {

struct RemoteInvocation {
  bool json = false;
  bool backward = false;  // compile: fetch the backward too.
  bool source = false;    // show: print the native kernels' source.
  // evict: entries not used for this long; negative: not asked.
  absl::Duration older_than = -absl::InfiniteDuration();
  int64_t to_bytes = -1;  // evict: down to this size; negative: not asked.
  std::string to;         // export: the file to write.
  std::string prefix;     // export: a key prefix in hex.
  double interval = 2;    // top: seconds between lines.
  int64_t count = -1;     // top: lines to print; negative: until killed.
  std::vector<std::string> positional;
};

class RemoteSession {
 public:
  RemoteSession(const DaemonCalls& daemon, std::ostream& out, std::ostream& err)
      : daemon_(daemon), out_(out), err_(err) {}

  // A unary call with a deadline of `seconds`; UNAVAILABLE is tried again.
  grpc::Status Call(int seconds, const DaemonCalls::Rpc& rpc) const {
    return daemon_.Unary(absl::Seconds(seconds), rpc);
  }
  // The stored artifact `digest`, checked against it (DaemonCalls).
  absl::Status FetchArtifact(const std::string& digest, v1::Artifact* artifact);
  // A unary AdminService call (`&v1::AdminService::Stub::Stats`, ...), as
  // Call.
  template <typename Request, typename Response>
  grpc::Status Admin(int seconds,
                     grpc::Status (v1::AdminService::Stub::*rpc)(
                         grpc::ClientContext*, const Request&, Response*),
                     const Request& request, Response* response) const {
    return Call(seconds, [&](grpc::ClientContext* context) {
      return (daemon_.admin().*rpc)(context, request, response);
    });
  }
  // Reports a failed call; returns the exit code.
  int Fail(const grpc::Status& status);
  int Fail(const absl::Status& status);

  const DaemonCalls& daemon() const { return daemon_; }
  std::ostream& out() { return out_; }
  std::ostream& err() { return err_; }

 private:
  const DaemonCalls& daemon_;
  std::ostream& out_;
  std::ostream& err_;
};

// The first 12 hex digits of a digest; "-" for none.
inline std::string ShortDigest(const std::string& digest) {
  return digest.empty() ? "-" : digest.substr(0, 12);
}

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CLI_REMOTE_SESSION_H_
