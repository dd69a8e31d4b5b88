// aotcache::Client: compiles graphs through aotcached and runs what comes
// back. Compile answers a CachedFunction at once with the forward; its
// Backward fetches the backward artifact the first time it runs (the
// server compiles it lazily, once for everyone) -- or, when the server has
// it already, a thread of the function's own fetches it while the caller
// runs the forward.
//
// Which server: ClientOptions::server, else $AOTCACHE_SERVER, else the
// default daemon on the unix socket in the default data dir -- started by
// the client if nothing answers there (daemon_launcher.h). "tls://host:port"
// speaks TLS; a token, CA and client certificate come from the options or
// the environment (connection.h).
//
// A trainer never fails because the cache is down: when no server can be
// reached (after retrying UNAVAILABLE with backoff) or the graph is over the
// server's limits, or the server may not compile it for this caller (a
// read-only token's miss: NOT_FOUND) or refuses the caller, the client
// compiles in process (with the native backend when this machine's
// compiler can build kernels, else the reference one) and the function's
// source() says so, with the reason. A malformed graph, or a CA or client
// certificate file that cannot be read, is an error either way.
//
// Thread-safety: Client and CachedFunction are thread-safe. A Client must
// outlive the CachedFunctions it returned (their Backward calls it).
#ifndef AOTCACHE_CLIENT_CPP_CLIENT_H_
#define AOTCACHE_CLIENT_CPP_CLIENT_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "client/cpp/artifact_dir.h"
#include "client/cpp/connection.h"
#include "client/cpp/daemon_calls.h"
#include "core/backend/backend.h"
#include "core/runtime/compiled_function.h"
#include "grpcpp/generic/generic_stub.h"

namespace aotcache {

struct ClientOptions {
  // A gRPC target or tls://host:port; empty: see above. The credentials:
  // empty ones from the environment (connection.h).
  std::string server;
  std::string token;
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  absl::Duration deadline = absl::Seconds(60);  // Per call.
  int max_attempts = 4;  // UNAVAILABLE only; the rest is never retried.
  absl::Duration initial_backoff = absl::Milliseconds(50);  // Doubles.
  // For the default daemon only: start one if none answers.
  bool start_daemon = true;
  absl::Duration daemon_idle_exit = absl::Minutes(30);
  // The aotcached to start, when $AOTCACHED is unset (FindAotcached).
  std::string daemon_binary;
  // This machine's copy of received artifacts (artifact_dir.h): the server
  // answers by digest and only unknown artifacts cross the wire. Empty:
  // DefaultDataDir()/client-artifacts. "none": always inline.
  std::string artifact_dir;
  // Its budget (dir_budget.h); negative: $AOTCACHE_ARTIFACT_DIR_MAX_SIZE,
  // else 1 GiB. 0: none.
  int64_t artifact_dir_max_bytes = -1;
};

// What crossed the wire, for monitoring and tests.
struct ClientCounters {
  int64_t artifacts_fetched = 0;  // Over FetchArtifact.
  int64_t bytes_fetched = 0;
  int64_t local_artifact_hits = 0;  // Found in the artifact dir.
  // Forwards this process had loaded already: no artifact read or load.
  int64_t loaded_forward_reuses = 0;
  // Calls tried again after the daemon answered UNAVAILABLE.
  int64_t unavailable_retries = 0;
};

enum class Source { kServer, kInProcess };

class Client;

class CachedFunction {
 public:
  const std::string& key() const { return key_; }  // Empty in process.
  Source source() const { return source_; }
  // Server: hit, miss or bypass. In process: unspecified.
  v1::CompileStatus status() const { return status_; }
  // Why the function was compiled in process; empty otherwise.
  const std::string& fallback_reason() const { return fallback_reason_; }
  // The backend its forward was compiled with ("native", "reference").
  const std::string& backend() const {
    return function_->forward_artifact().backend();
  }
  // Why the server compiled it without storing it (status bypass).
  const std::string& bypass_reason() const { return bypass_reason_; }
  // None for inference; ready once the server has it or this function
  // fetched it; else pending.
  v1::BackwardState backward_state();
  v1::Mode mode() const { return mode_; }
  const CompiledFunction& function() const { return *function_; }

  // `seed` keys the random ops, if the graph has any: pass a fresh one per
  // call (the same seed draws the same masks).
  absl::StatusOr<CompiledFunction::ForwardResult> Forward(
      std::vector<Tensor>* inputs, uint64_t seed = 0) const {
    return function_->Forward(inputs, seed);
  }
  // Fetches (or, with no server, compiles) the backward on first use.
  // FailedPrecondition for an inference function, or when the backward the
  // server has does not pair with this forward (a server of another build)
  // or needs a later CPU level than this machine's.
  absl::StatusOr<CompiledFunction::Gradients> Backward(
      const std::vector<Tensor>& saved, const std::vector<Tensor>& tangents);

  // Waits for the backward's prefetch, if one runs.
  ~CachedFunction();

 private:
  friend class Client;
  CachedFunction() = default;
  absl::Status EnsureBackward();
  // A training function whose backward the server has: fetch and load it
  // on a thread of its own while the caller runs the forward, so that the
  // first backward does not wait for it. Its error, if any, is the first
  // Backward's (which fetches again).
  void PrefetchBackward();

  // The request as sent: an encoded v1::CompileRequest (deterministic).
  v1::CompileRequest DecodedRequest() const;

  Client* client_ = nullptr;
  std::string request_bytes_;
  std::string key_;
  Source source_ = Source::kServer;
  v1::CompileStatus status_ = v1::COMPILE_STATUS_UNSPECIFIED;
  v1::Mode mode_ = v1::MODE_UNSPECIFIED;
  std::string fallback_reason_;
  std::string bypass_reason_;
  bool server_backward_ready_ = false;
  std::unique_ptr<CompiledFunction> function_;
  std::thread prefetch_;
  absl::Mutex mu_;
  bool backward_attached_ ABSL_GUARDED_BY(mu_) = false;
};

class Client {
 public:
  explicit Client(ClientOptions options = ClientOptions());

  // The function for `graph`, from the server or compiled in process.
  absl::StatusOr<std::unique_ptr<CachedFunction>> Compile(
      const v1::Graph& graph,
      const v1::CompileOptions& options = v1::CompileOptions());

  // The gRPC target this client uses.
  const std::string& target() const { return target_; }
  ClientCounters counters() const;

  // The daemon's RPCs with this client's credentials, deadlines, retries
  // and digest checks, for tools beside Compile (the CLI). The error when
  // the connection's files (a CA, a client certificate) cannot be read.
  absl::StatusOr<const DaemonCalls*> daemon() const;

  // The backend in-process compiles use: native when this machine's C++
  // compiler builds and links a kernel, else reference; found out on
  // first use (one compiler run). `why_reference` says why not native.
  struct InProcessBackend {
    const Backend* backend;
    std::string why_reference;  // Empty when native.
  };
  InProcessBackend in_process_backend();

 private:
  friend class CachedFunction;

  // Once: for the default daemon, starts it if nothing answers. Returns
  // why no server can be used, or "" when one can.
  std::string EnsureServer();
  // The Compile RPC with the request's deterministic bytes: the daemon
  // answers bytes it has seen before without decoding them.
  grpc::Status CompileCall(grpc::ClientContext* context,
                           const grpc::ByteBuffer& request,
                           v1::CompileResponse* response);
  absl::StatusOr<v1::Artifact> FetchBackward(const CachedFunction& f);
  // The artifact `digest` from the artifact dir, else from the server.
  absl::StatusOr<v1::Artifact> LocalOrFetch(const std::string& digest);
  // The forward the server answered with, loaded: shared with the
  // functions that loaded it before when answered by reference.
  absl::StatusOr<std::unique_ptr<CompiledFunction>> LoadServed(
      v1::CompileResponse& response);

  ClientOptions options_;
  std::string target_;
  std::string host_target_bytes_;  // This machine's encoded v1::Target.
  bool is_default_daemon_;
  // Not OK when the connection's files could not be read (Compile says so).
  const absl::StatusOr<std::unique_ptr<const DaemonCalls>> daemon_;
  std::shared_ptr<grpc::Channel> channel_;
  grpc::GenericStub generic_stub_;
  std::unique_ptr<ArtifactDir> artifact_dir_;  // Null: inline artifacts.
  mutable absl::Mutex mu_;
  ClientCounters counters_ ABSL_GUARDED_BY(mu_);
  // Forwards loaded from artifacts answered by reference, by entry key and
  // artifact digest (which fix the metadata and the program). Cleared when
  // full: it only saves loads.
  static constexpr size_t kMaxLoadedForwards = 1024;
  absl::flat_hash_map<std::string, std::unique_ptr<const CompiledFunction>>
      loaded_forwards_ ABSL_GUARDED_BY(mu_);
  // Held while probing for and starting the default daemon (seconds).
  absl::Mutex start_mu_;
  bool server_checked_ ABSL_GUARDED_BY(start_mu_) = false;
  absl::Mutex backend_mu_;
  std::unique_ptr<Backend> in_process_ ABSL_GUARDED_BY(backend_mu_);
  std::string why_reference_ ABSL_GUARDED_BY(backend_mu_);
  std::string server_problem_ ABSL_GUARDED_BY(start_mu_);
};

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CPP_CLIENT_H_
