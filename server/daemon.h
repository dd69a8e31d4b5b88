// Daemon: everything aotcached runs -- the store in the data dir, the cache,
// the backend (native or reference), and a gRPC server with CompileService,
// AdminService and the standard health service -- listening on the
// configured address and, always, on a unix socket inside the data dir.
// Callers are checked by AccessControl (tokens file, client certificates);
// the TCP listener speaks TLS when given certificates. A listener on an
// address other than loopback needs credentials (a tokens file or mTLS)
// unless the operator says anonymous callers are fine.
// Start fails at once, with a clear message, when another daemon holds the
// data dir. Shutdown drains in-flight requests before returning.
// Thread-safety: Start, Shutdown and Wait from one thread; the services run
// on gRPC's threads.
#ifndef AOTCACHE_SERVER_DAEMON_H_
#define AOTCACHE_SERVER_DAEMON_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/backend/backend.h"
#include "core/cache/cache.h"
#include "core/paths/data_dir.h"
#include "core/store/rocksdb_store.h"
#include "core/store/store_janitor.h"
#include "grpcpp/server.h"
#include "server/access_control.h"
#include "server/bytes_in_flight.h"
#include "server/call_clock.h"
#include "server/connection_gate.h"
#include "server/daemon_metrics.h"
#include "server/http_listener.h"
#include "server/tls_credentials.h"
#include "server/worker_pool.h"

namespace aotcache {

struct DaemonOptions {
  // host:port (port 0 picks a free one), or unix:PATH; empty: the unix
  // socket only.
  std::string listen = "127.0.0.1:0";
  std::string data_dir;  // Required.
  int64_t max_request_bytes = int64_t{64} << 20;
  // Request bytes held at once (decoded and analyzed, a request takes
  // several times its size); more are refused with RESOURCE_EXHAUSTED.
  int64_t max_bytes_in_flight = int64_t{512} << 20;
  int64_t max_graph_nodes = 100000;
  Durability durability = Durability::kWalNoSync;
  // The store's size (its entries and artifacts as stored): past max_size
  // the least recently used entries are evicted down to 90% of it; past
  // max_size_hard_limit (default: max_size + 25%) nothing new is stored, and
  // compiles are answered as bypasses ("cache full"). 0: no limit.
  int64_t max_size = 0;
  int64_t max_size_hard_limit = 0;
  // Artifacts at rest: zstd at level 3 by default.
  ArtifactCompression compression;
  // Below this many free bytes on the data dir's disk nothing is stored
  // (answers are compiled, not stored, and say so); a daemon started below
  // it serves its store read-only.
  int64_t min_free_bytes = int64_t{64} << 20;
  // "auto": native when the C++ compiler ($AOTCACHE_CXX, else c++ on PATH)
  // runs, else reference; "native"; "reference".
  std::string backend_name = "auto";
  // The native backend's compiler: "auto" in bubblewrap where it runs here
  // (else unconfined, with a warning), "bwrap" (an error where it does not
  // run), "none". Resource limits apply either way.
  std::string compiler_sandbox = "auto";
  // TCP connections held at once, per peer address and in all (the total is
  // also kept below half the open-file limit): past them a connection is
  // closed at once, and the unix socket keeps answering.
  ConnectionLimits connections;
  // A connection without a call for this long is closed (clients reconnect
  // on their next call).
  std::chrono::milliseconds idle_connection_timeout = std::chrono::minutes(5);
  // A connection whose handshake (TLS, then HTTP/2's preface and settings)
  // has not finished by then is closed: the one bound on a TLS listener's
  // unfinished connections, which the connection gate does not see.
  std::chrono::milliseconds handshake_timeout = std::chrono::seconds(10);
  // A FetchArtifact stream the client has not read to its end by then is
  // cancelled (an unread stream holds its artifact's bytes until then).
  std::chrono::milliseconds fetch_time_limit = std::chrono::minutes(2);
  Backend* backend = nullptr;  // Not owned; overrides backend_name.
  // Who may call (token_table.h for the format); empty: anyone who can
  // connect may do anything.
  std::string tokens_file;
  // Without it, a TCP listener on an address other than loopback needs a
  // tokens file or mTLS, and the daemon refuses to start.
  bool insecure_allow_anonymous = false;
  // TLS on the TCP listener (gRPC's own listener then, not the connection
  // gate: gRPC 1.51 takes handed-over connections in plaintext only).
  TlsOptions tls;
  // host:port of the HTTP endpoints (http_listener.h: /healthz, /readyz,
  // /metrics); empty: none. HTTPS with tls's certificate. Off loopback it
  // needs a tokens file (/metrics needs the admin scope) unless
  // insecure_allow_anonymous.
  std::string http_listen;
};

// Where the host compiler's private dirs are made for the daemon of
// `data_dir`: <data_dir>/compile-tmp, 0700 and the daemon's, where no other
// user can rename or replace them (a root under a shared $TMPDIR could be
// made first by anyone). A daemon makes it anew when it starts (its store's
// lock proves it is the only one of this data dir), so that what a killed
// daemon's compiles left is removed, and refuses to start when it cannot
// verify it.
std::string CompilerTempRoot(const std::string& data_dir);

class Daemon {
 public:
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(
      const DaemonOptions& options);
  ~Daemon();

  int port() const { return port_; }  // 0 when not listening on TCP.
  // The HTTP endpoints' port; 0 without http_listen.
  int http_port() const { return http_ != nullptr ? http_->port() : 0; }
  const std::string& socket_path() const { return socket_path_; }
  // "native" or "reference".
  absl::string_view backend_name() const { return backend_name_; }
  // Empty while the store takes writes; else why not (a full disk, say).
  std::string store_write_problem() const { return store_->WriteProblem(); }
  const std::string& store_recovery_damage() const {
    return store_->recovery_damage();
  }
  Cache& cache() { return *cache_; }
  // Reads the tokens file again (SIGHUP); on an error the grants in use
  // stay.
  absl::Status ReloadTokens() { return access_->Reload(); }
  // How long since the last call to any service.
  absl::Duration SinceLastCall() const { return call_clock_.SinceLastCall(); }

  // Stops accepting calls, lets in-flight ones finish (up to `grace`), and
  // closes the store.
  void Shutdown(std::chrono::milliseconds grace);

 private:
  Daemon() = default;

  // Destroyed in reverse: the server stops before the cache and store go.
  std::unique_ptr<RocksDbStore> store_;
  std::unique_ptr<StoreJanitor> janitor_;  // Stopped before the store.
  std::unique_ptr<Backend> backend_;
  std::string backend_name_;
  std::unique_ptr<Cache> cache_;
  std::unique_ptr<AccessControl> access_;
  CallClock call_clock_;
  // Before the pool: its tasks give their bytes back when it drains.
  std::unique_ptr<BytesInFlight> in_flight_;
  std::unique_ptr<WorkerPool> workers_;
  std::unique_ptr<DaemonMetrics> metrics_;  // Outlives the server.
  std::unique_ptr<grpc::Service> compile_service_;
  std::unique_ptr<grpc::Service> admin_service_;
  std::unique_ptr<grpc::Server> server_;
  // After the server: stopped (destroyed) first, since it hands the server
  // connections.
  std::unique_ptr<ConnectionGate> gate_;
  int port_ = 0;
  std::string socket_path_;
  bool shut_down_ = false;
  std::atomic<bool> draining_{false};
  // Last: stopped first, while everything it reads is still there.
  std::unique_ptr<HttpListener> http_;
};

}  // namespace aotcache

#endif  // AOTCACHE_SERVER_DAEMON_H_
