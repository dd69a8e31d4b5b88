#include "server/daemon.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "core/backend/native/backend_choice.h"
#include "core/backend/native/native_backend.h"
#include "core/paths/byte_size.h"
#include "core/paths/private_dir.h"
#include "core/status_macros.h"
#include "glog/logging.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "server/admin_service.h"
#include "server/compile_service.h"
#include "server/stats_snapshot.h"

namespace aotcache {
namespace {

// Compiles, and waits on identical compiles in flight, run at most this many
// at once; more queue.
constexpr int kMaxCompileThreads = 64;

// The host compiler's options for `sandbox` ("auto": bubblewrap where it
// runs here).
absl::StatusOr<std::unique_ptr<NativeBackend>> NativeWithSandbox(
    HostCompilerOptions compiler, const std::string& sandbox) {
  if (sandbox == "none") return NativeBackend::CreateChecked(compiler);
  if (sandbox != "bwrap" && sandbox != "auto") {
    return absl::InvalidArgumentError(absl::StrCat("unknown compiler sandbox '",
                                                   sandbox,
                                                   "' (available: auto, bwrap, "
                                                   "none)"));
  }
  compiler.sandbox = Sandbox::kBubblewrap;
  absl::StatusOr<std::unique_ptr<NativeBackend>> sandboxed =
      NativeBackend::CreateChecked(compiler);
  if (sandboxed.ok()) LOG(INFO) << "the C++ compiler runs in bubblewrap";
  if (sandboxed.ok() || sandbox == "bwrap") return sandboxed;
  LOG(WARNING) << "the C++ compiler runs without a sandbox (bubblewrap does "
                  "not run here: "
               << sandboxed.status().message()
               << "); install bubblewrap to confine it";
  compiler.sandbox = Sandbox::kNone;
  return NativeBackend::CreateChecked(compiler);
}

// The backend `name` asks for; "auto" is native when the compiler runs.
absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(
    const DaemonOptions& options) {
  HostCompilerOptions compiler = HostCompilerFromEnvironment();
  compiler.temp_root = CompilerTempRoot(options.data_dir);
  std::string why_reference;
  absl::StatusOr<std::unique_ptr<Backend>> backend = ChooseBackend(
      options.backend_name,
      [&] { return NativeWithSandbox(compiler, options.compiler_sandbox); },
      &why_reference);
  if (!why_reference.empty()) {
    LOG(WARNING) << "the native backend cannot run here (" << why_reference
                 << "): the reference backend";
  }
  return backend;
}

// Who may call: the tokens file's grants, else anyone -- refused for a
// listener others can reach, unless the operator allowed it.
absl::StatusOr<std::unique_ptr<AccessControl>> MakeAccessControl(
    const DaemonOptions& options) {
  const bool tcp =
      !options.listen.empty() && !absl::StartsWith(options.listen, "unix:");
  if (!options.tokens_file.empty()) {
    if (tcp && !options.tls.enabled() && !IsLoopbackAddress(options.listen)) {
      LOG(WARNING) << "tokens cross the network to " << options.listen
                   << " in clear text, where anyone on the path can read "
                      "and reuse them: give --tls_cert and --tls_key";
    }
    return AccessControl::FromTokensFile(options.tokens_file);
  }
  const bool http_off_loopback =
      !options.http_listen.empty() && !IsLoopbackAddress(options.http_listen);
  if (!options.tokens_file.empty() && http_off_loopback &&
      options.tls.cert_file.empty()) {
    LOG(WARNING) << "the token /metrics needs crosses the network to "
                 << options.http_listen
                 << " in clear text: give --tls_cert and --tls_key";
  }
  if (options.tokens_file.empty() && http_off_loopback &&
      !options.insecure_allow_anonymous) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--http_listen=", options.http_listen,
        " without a tokens file would show anyone who reaches it the "
        "daemon's metrics: give --tokens_file (its admin scope reads "
        "/metrics), or --insecure_allow_anonymous on a network you trust"));
  }
  if (tcp && !IsLoopbackAddress(options.listen) &&
      options.tls.client_ca_file.empty() && !options.insecure_allow_anonymous) {
    return absl::FailedPreconditionError(absl::StrCat(
        "listening on ", options.listen,
        " without credentials would let anyone who reaches it read every "
        "graph, compile and delete entries: give --tokens_file (with "
        "--tls_cert and --tls_key), or --tls_client_ca for mTLS, or "
        "--insecure_allow_anonymous on a network you trust"));
  }
  return std::make_unique<AccessControl>();
}

}  // namespace

std::string CompilerTempRoot(const std::string& data_dir) {
  return absl::StrCat(data_dir, "/compile-tmp");
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(
    const DaemonOptions& options) {
  if (options.data_dir.empty())
    return absl::InvalidArgumentError("data_dir is required");
  std::error_code ec;
  // The data dir holds the store and the socket: the owner's alone (an
  // existing dir keeps the mode its operator gave it).
  if (absl::Status made = CreatePrivateDirectories(options.data_dir);
      !made.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("data dir: ", made.message()));
  }
  // Another user who could write it could swap the store or the compiler's
  // outputs: refused (its group may, for a volume mounted for a group).
  if (absl::Status st =
          CheckNobodyElseWrites(options.data_dir, GroupWrites::kAllowed);
      !st.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("data dir: ", st.message()));
  }
  std::unique_ptr<Daemon> d(new Daemon());
  StoreOptions store_options;
  store_options.path = absl::StrCat(options.data_dir, "/store");
  store_options.durability = options.durability;
  store_options.min_free_bytes = options.min_free_bytes;
  store_options.compression = options.compression;
  if (options.max_size_hard_limit > 0 &&
      options.max_size_hard_limit < options.max_size) {
    return absl::InvalidArgumentError(
        "--max_size_hard_limit must not be below --max_size");
  }
  store_options.hard_limit_bytes = options.max_size_hard_limit;
  if (store_options.hard_limit_bytes == 0 && options.max_size > 0) {
    store_options.hard_limit_bytes = options.max_size / 4 * 5;
  }
  absl::StatusOr<std::unique_ptr<RocksDbStore>> store =
      RocksDbStore::Open(store_options);
  if (!store.ok()) {
    if (absl::IsUnavailable(store.status())) {
      return absl::UnavailableError(
          absl::StrCat("another aotcached is already serving ",
                       options.data_dir, " (", store.status().message(), ")"));
    }
    return store.status();
  }
  d->store_ = *std::move(store);
  // The store's lock proves no other daemon uses this data dir: what is in
  // its compiler temp root was left by a killed one.
  if (absl::Status st = ResetPrivateDirectory(
          CompilerTempRoot(options.data_dir), GroupWrites::kAllowed);
      !st.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("compiler temp dir: ", st.message()));
  }
  Backend* backend = options.backend;
  if (backend == nullptr) {
    absl::StatusOr<std::unique_ptr<Backend>> made = MakeBackend(options);
    if (!made.ok()) return made.status();
    d->backend_ = *std::move(made);
    backend = d->backend_.get();
  }
  d->backend_name_ = std::string(backend->name());
  AOTCACHE_ASSIGN_OR_RETURN(d->access_, MakeAccessControl(options));
  std::shared_ptr<grpc::ServerCredentials> tls;
  if (options.tls.enabled()) {
    AOTCACHE_ASSIGN_OR_RETURN(tls, TlsServerCredentials(options.tls));
  } else if (!options.tls.key_file.empty() ||
             !options.tls.client_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls_key and --tls_client_ca need --tls_cert");
  }
  CacheOptions cache_options;
  cache_options.limits.max_nodes = options.max_graph_nodes;
  cache_options.on_warning = [](const std::string& message) {
    LOG(WARNING) << message;
  };
  d->cache_ = std::make_unique<Cache>(d->store_.get(), backend, cache_options);
  d->workers_ = std::make_unique<WorkerPool>(kMaxCompileThreads);
  d->in_flight_ = std::make_unique<BytesInFlight>(options.max_bytes_in_flight);
  d->metrics_ = std::make_unique<DaemonMetrics>();
  d->compile_service_ = std::make_unique<CompileServiceImpl>(
      d->cache_.get(), d->store_.get(), d->access_.get(), &d->call_clock_,
      d->workers_.get(), d->in_flight_.get(), options.fetch_time_limit,
      d->metrics_.get());
  SizeLimits limits;
  limits.max_bytes = options.max_size;
  limits.on_sweep = [](const absl::StatusOr<EvictionReport>& report) {
    if (!report.ok()) {
      LOG(ERROR) << "eviction sweep (--max_size) failed: " << report.status();
      return;
    }
    LOG(INFO) << "--max_size: evicted " << report->entries
              << " least recently used entries ("
              << FormatByteSize(report->bytes) << ")";
  };
  d->janitor_ = std::make_unique<StoreJanitor>(d->store_.get(), limits);
  d->admin_service_ = std::make_unique<AdminServiceImpl>(
      d->cache_.get(), d->store_.get(), d->janitor_.get(), d->access_.get(),
      &d->call_clock_);

  // The store's lock proves no other daemon serves this dir: a socket file
  // left here is stale.
  d->socket_path_ = SocketPath(options.data_dir);
  std::filesystem::remove(d->socket_path_, ec);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_request_bytes));
  // gRPC holds a request whole before the service sees it: what it holds
  // at once is bounded too (past it, gRPC refuses streams with
  // RESOURCE_EXHAUSTED).
  grpc::ResourceQuota quota("aotcached");
  quota.Resize(static_cast<size_t>(
      std::max(options.max_bytes_in_flight, 2 * options.max_request_bytes)));
  builder.SetResourceQuota(quota);
  builder.SetMaxSendMessageSize(static_cast<int>(int64_t{256} << 20));
  const int idle_ms = static_cast<int>(options.idle_connection_timeout.count());
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, idle_ms);
  builder.AddChannelArgument(
      GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
      static_cast<int>(options.handshake_timeout.count()));
  if (absl::StartsWith(options.listen, "unix:")) {
    builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials());
  } else if (!options.listen.empty() && tls != nullptr) {
    // gRPC's own listener: the gate hands connections over in plaintext.
    RaiseOpenFileLimit();
    builder.AddListeningPort(options.listen, tls, &d->port_);
  } else if (!options.listen.empty()) {
    // TCP connections come through the gate (connection_gate.h).
    ConnectionLimits limits = options.connections;
    const int64_t open_files = RaiseOpenFileLimit();
    if (open_files > 0) {
      limits.max_total =
          static_cast<int>(std::min<int64_t>(limits.max_total, open_files / 2));
    }
    AOTCACHE_ASSIGN_OR_RETURN(d->gate_,
                              ConnectionGate::Listen(options.listen, limits));
    d->port_ = d->gate_->port();
  }
  builder.AddListeningPort(absl::StrCat("unix:", d->socket_path_),
                           grpc::InsecureServerCredentials());
  builder.RegisterService(d->compile_service_.get());
  builder.RegisterService(d->admin_service_.get());
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(d->metrics_->CallRecorderFactory(d->access_.get()));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  // The sockets are created the owner's alone (the --listen one may be in a
  // shared dir): no moment in which another user could connect.
  const mode_t umask_before = umask(0177);
  d->server_ = builder.BuildAndStart();
  umask(umask_before);
  if (d->server_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen, " and ",
                     d->socket_path_, " (is the port in use?)"));
  }
  if (d->gate_ != nullptr) d->gate_->Start(d->server_.get());
  if (!options.http_listen.empty()) {
    Daemon* self = d.get();
    HttpListenerOptions http;
    http.listen = options.http_listen;
    http.cert_file = options.tls.cert_file;
    http.key_file = options.tls.key_file;
    http.reload_interval = absl::FromChrono(options.tls.reload_interval);
    http.not_ready = [self] {
      return self->draining_ ? std::string("draining: shutting down")
                             : std::string();
    };
    http.authorize = [self](absl::string_view authorization) {
      return self->access_->CheckAuthorization(authorization, Scope::kAdmin,
                                               "GET /metrics");
    };
    http.metrics = [self] {
      return self->metrics_->Render(
          StatsSnapshot(*self->cache_, *self->store_, *self->janitor_));
    };
    AOTCACHE_ASSIGN_OR_RETURN(d->http_, HttpListener::Start(std::move(http)));
  }
  return d;
}

void Daemon::Shutdown(std::chrono::milliseconds grace) {
  if (shut_down_) return;
  shut_down_ = true;
  draining_ = true;  // /readyz: 503 from now on.
  // Calls still running at the deadline are cancelled, but a compile holds
  // its call until it returns: the compilers are killed then, so that the
  // daemon stops within the grace (systemd's and Kubernetes' kill follows).
  absl::Notification stopped;
  std::thread stop_compilers([&] {
    if (!stopped.WaitForNotificationWithTimeout(absl::FromChrono(grace))) {
      CancelHostCompiles();
    }
  });
  if (gate_ != nullptr) gate_->Stop();  // No new connections.
  server_->Shutdown(std::chrono::system_clock::now() + grace);
  server_->Wait();
  stopped.Notify();
  stop_compilers.join();
  std::error_code ec;
  std::filesystem::remove(socket_path_, ec);
}

Daemon::~Daemon() {
  if (server_ != nullptr) Shutdown(std::chrono::milliseconds(0));
}

}  // namespace aotcache
