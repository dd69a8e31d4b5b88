// ConnectionGate: the daemon's TCP listener. It accepts connections itself
// and hands each to the gRPC server (AddInsecureChannelFromFd), so that no
// peer can exhaust the daemon's file descriptors: past `max_per_peer`
// connections from one address, or `max_total` in all, a new connection is
// closed at once (counted, logged now and then). gRPC 1.51's own listener
// stops accepting for good after one EMFILE, the unix socket's included; the
// gate keeps every descriptor the gRPC server may need below the limit, and
// itself retries after one. A connection is counted until its socket is
// closed, whoever closes it (the server times out idle ones).
// Thread-safety: Start once; the accept loop runs on a thread of its own
// until Stop (or destruction).
#ifndef AOTCACHE_SERVER_CONNECTION_GATE_H_
#define AOTCACHE_SERVER_CONNECTION_GATE_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/server.h"

namespace aotcache {

struct ConnectionLimits {
  int max_per_peer = 64;
  int max_total = 1024;
};

class ConnectionGate {
 public:
  // Binds and listens on `address` ("host:port", "[v6]:port"; port 0 picks
  // one). Unavailable when the address is in use, InvalidArgument when it
  // does not parse or resolve.
  static absl::StatusOr<std::unique_ptr<ConnectionGate>> Listen(
      const std::string& address, ConnectionLimits limits);
  ~ConnectionGate();

  int port() const { return port_; }

  // Hands accepted connections to `server` (which must outlive Stop).
  void Start(grpc::Server* server);
  // Stops accepting and closes the listener (new clients are refused at
  // once); connections handed over stay the server's. Idempotent.
  void Stop();

  // Connections closed at once since Start, for tests and stats.
  int64_t refused() const;

 private:
  ConnectionGate(int listen_fd, int port, ConnectionLimits limits);
  void AcceptLoop();
  // Drops the connections whose sockets were closed since they were
  // counted.
  void Prune() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  int listen_fd_;  // -1 once stopped.
  const int port_;
  const ConnectionLimits limits_;
  int wake_[2] = {-1, -1};  // A pipe: Stop wakes the loop.
  grpc::Server* server_ = nullptr;
  std::thread loop_;

  struct Connection {
    int fd;
    ino_t inode;  // The socket's: another socket under a reused fd differs.
    std::string peer;
  };
  mutable absl::Mutex mu_;
  std::vector<Connection> open_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int> per_peer_ ABSL_GUARDED_BY(mu_);
  int64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
};

// Whether every address `address` ("host:port") resolves to is a loopback
// one (127.0.0.0/8, ::1): only this machine's users can connect there.
bool IsLoopbackAddress(const std::string& address);

// Raises this process's soft limit of open files to its hard limit; returns
// the soft limit now in force.
int64_t RaiseOpenFileLimit();

}  // namespace aotcache

#endif  // AOTCACHE_SERVER_CONNECTION_GATE_H_
