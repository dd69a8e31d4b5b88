// Connection: how every aotcache client (the C++ client, the CLI, the
// Python package through the C++ client) reaches a daemon. The server is a
// gRPC target ("host:port", "unix:PATH") or "tls://host:port" for TLS; the
// token, when there is one, goes with every call as `authorization: Bearer
// TOKEN` metadata (also over plaintext: gRPC sends no call credentials
// there). Channels have no receive limit: the daemon answers artifacts of
// up to 256 MiB inline.
//
// What ConnectionOptions leaves empty comes from the environment:
// AOTCACHE_SERVER (else the default daemon's unix socket), AOTCACHE_TOKEN,
// AOTCACHE_CA (PEM roots for tls://; else the system's), and
// AOTCACHE_CLIENT_CERT with AOTCACHE_CLIENT_KEY (a client certificate, for
// a daemon that asks for one: mTLS).
// Thread-safety: a Connection is immutable after Open; thread-safe.
#ifndef AOTCACHE_CLIENT_CPP_CONNECTION_H_
#define AOTCACHE_CLIENT_CPP_CONNECTION_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"

namespace aotcache {

struct ConnectionOptions {
  std::string server;
  std::string token;
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

// `options` with what it leaves empty taken from the environment.
ConnectionOptions WithEnvironment(ConnectionOptions options);

class Connection {
 public:
  // Reads the certificate files `options` names (FailedPrecondition naming
  // one that cannot be read); connects lazily, on the first call.
  static absl::StatusOr<Connection> Open(const ConnectionOptions& options);

  // The server as given ("tls://host:port" included), for messages.
  const std::string& server() const { return server_; }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  // Sets up `context` for one call: its deadline and the token.
  void Prepare(grpc::ClientContext* context, absl::Duration deadline) const;

 private:
  std::string server_;
  std::string token_;
  std::shared_ptr<grpc::Channel> channel_;
};

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CPP_CONNECTION_H_
