#include "server/daemon.h"

#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/backend/native/native_backend.h"
#include "core/backend/reference_backend.h"
#include "core/key/host_target.h"
#include "glog/logging.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "server/admin_service.h"
#include "server/compile_service.h"

namespace aotcache {
namespace {

// Compiles, and waits on identical compiles in flight, run at most this many
// at once; more queue.
constexpr int kMaxCompileThreads = 64;

// The backend `name` asks for; "auto" is native when the compiler runs.
absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const std::string& name) {
  if (name == "reference") return std::make_unique<ReferenceBackend>();
  if (name != "native" && name != "auto") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown backend '", name, "' (available: auto, native, reference)"));
  }
  HostCompilerOptions compiler;
  const char* cxx = std::getenv("AOTCACHE_CXX");
  if (cxx != nullptr && *cxx != '\0') compiler.compiler = cxx;
  absl::StatusOr<std::unique_ptr<NativeBackend>> native =
      NativeBackend::Create(compiler);
  // A compiler that runs but cannot link kernels (libopenblas-dev missing,
  // say) would fail every compile: found out now, once.
  absl::Status usable =
      native.ok() ? (*native)->CheckToolchain(HostTarget()) : native.status();
  if (usable.ok()) return std::unique_ptr<Backend>(*std::move(native));
  if (name == "native") return usable;
  LOG(WARNING) << "the native backend cannot run here (" << usable.message()
               << "): the reference backend";
  return std::make_unique<ReferenceBackend>();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(
    const DaemonOptions& options) {
  if (options.data_dir.empty())
    return absl::InvalidArgumentError("data_dir is required");
  std::error_code ec;
  // The data dir holds the store and the socket: the owner's alone, whatever
  // the umask (an existing dir keeps the mode its operator gave it).
  if (std::filesystem::create_directories(options.data_dir, ec)) {
    std::filesystem::permissions(options.data_dir,
                                 std::filesystem::perms::owner_all, ec);
  }
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create data dir ", options.data_dir, ": ", ec.message()));
  }
  std::unique_ptr<Daemon> d(new Daemon());
  StoreOptions store_options;
  store_options.path = absl::StrCat(options.data_dir, "/store");
  store_options.durability = options.durability;
  store_options.min_free_bytes = options.min_free_bytes;
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
  Backend* backend = options.backend;
  if (backend == nullptr) {
    absl::StatusOr<std::unique_ptr<Backend>> made =
        MakeBackend(options.backend_name);
    if (!made.ok()) return made.status();
    d->backend_ = *std::move(made);
    backend = d->backend_.get();
  }
  d->backend_name_ = std::string(backend->name());
  CacheOptions cache_options;
  cache_options.limits.max_nodes = options.max_graph_nodes;
  d->cache_ = std::make_unique<Cache>(d->store_.get(), backend, cache_options);
  d->workers_ = std::make_unique<WorkerPool>(kMaxCompileThreads);
  d->compile_service_ = std::make_unique<CompileServiceImpl>(
      d->cache_.get(), d->store_.get(), &d->call_clock_, d->workers_.get());
  d->admin_service_ = std::make_unique<AdminServiceImpl>(
      d->cache_.get(), d->store_.get(), &d->call_clock_);

  // The store's lock proves no other daemon serves this dir: a socket file
  // left here is stale.
  d->socket_path_ = SocketPath(options.data_dir);
  std::filesystem::remove(d->socket_path_, ec);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default: a second daemon on a port in use
  // would bind it too and take half of its traffic to another store.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_request_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(int64_t{256} << 20));
  if (!options.listen.empty()) {
    if (absl::StartsWith(options.listen, "unix:")) {
      builder.AddListeningPort(options.listen,
                               grpc::InsecureServerCredentials());
    } else {
      builder.AddListeningPort(options.listen,
                               grpc::InsecureServerCredentials(), &d->port_);
    }
  }
  builder.AddListeningPort(absl::StrCat("unix:", d->socket_path_),
                           grpc::InsecureServerCredentials());
  builder.RegisterService(d->compile_service_.get());
  builder.RegisterService(d->admin_service_.get());
  d->server_ = builder.BuildAndStart();
  if (d->server_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen, " and ",
                     d->socket_path_, " (is the port in use?)"));
  }
  // Only the owner may connect (the dir may be shared with a group).
  std::filesystem::permissions(
      d->socket_path_,
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
      ec);
  return d;
}

void Daemon::Shutdown(std::chrono::milliseconds grace) {
  if (shut_down_) return;
  shut_down_ = true;
  server_->Shutdown(std::chrono::system_clock::now() + grace);
  server_->Wait();
  std::error_code ec;
  std::filesystem::remove(socket_path_, ec);
}

Daemon::~Daemon() {
  if (server_ != nullptr) Shutdown(std::chrono::milliseconds(0));
}

}  // namespace aotcache
