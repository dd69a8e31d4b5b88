#include "client/cpp/client.h"

#include <chrono>
#include <cstdlib>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "aotcache/v1/compile_frames.pb.h"
#include "client/cpp/daemon_launcher.h"
#include "core/analysis/analyze.h"
#include "core/backend/compile_plan.h"
#include "core/backend/native/backend_choice.h"
#include "core/backend/native/native_backend.h"
#include "core/backend/reference_backend.h"
#include "core/graph/deterministic_bytes.h"
#include "core/key/target.h"
#include "core/paths/data_dir.h"
#include "core/paths/dir_budget.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace aotcache {
namespace {

// The server cannot help with this call, but the client can compile the
// graph itself.
bool ShouldCompileInProcess(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE ||
         // A miss this caller may not compile there (a read-only token).
         code == grpc::StatusCode::NOT_FOUND ||
         code == grpc::StatusCode::UNAUTHENTICATED ||
         code == grpc::StatusCode::PERMISSION_DENIED ||
         // What a call on a connection the daemon closed as it exited gets.
         code == grpc::StatusCode::CANCELLED ||
         code == grpc::StatusCode::DEADLINE_EXCEEDED ||
         code == grpc::StatusCode::RESOURCE_EXHAUSTED;
}

bool DefaultDaemonWanted(const ClientOptions& options) {
  const char* env = std::getenv("AOTCACHE_SERVER");
  return options.server.empty() && (env == nullptr || *env == '\0');
}

absl::StatusOr<CompilePlan> PlanInProcess(const v1::CompileRequest& request) {
  absl::StatusOr<Analysis> analysis =
      Analyze(request.graph(), request.options());
  if (!analysis.ok()) return analysis.status();
  return PlanCompilation(*analysis);
}

absl::StatusOr<std::unique_ptr<const DaemonCalls>> OpenDaemon(
    const ClientOptions& options) {
  ConnectionOptions connect;
  connect.server = options.server;
  connect.token = options.token;
  connect.ca_file = options.ca_file;
  connect.cert_file = options.cert_file;
  connect.key_file = options.key_file;
  absl::StatusOr<Connection> connection =
      Connection::Open(WithEnvironment(connect));
  if (!connection.ok()) return connection.status();
  CallPolicy policy;
  policy.deadline = options.deadline;
  policy.max_attempts = options.max_attempts;
  policy.initial_backoff = options.initial_backoff;
  return std::make_unique<const DaemonCalls>(*std::move(connection), policy);
}

}  // namespace

Client::Client(ClientOptions options)
    : options_(std::move(options)),
      target_(ResolveServerTarget(options_.server)),
      host_target_bytes_(DeterministicBytes(HostTarget())),
      is_default_daemon_(DefaultDaemonWanted(options_)),
      daemon_(OpenDaemon(options_)),
      // Unused when the connection did not open: Compile returns why first.
      channel_(daemon_.ok()
                   ? (*daemon_)->connection().channel()
                   : grpc::CreateChannel("unix:/nonexistent",
                                         grpc::InsecureChannelCredentials())),
      generic_stub_(channel_) {
  if (options_.artifact_dir != "none") {
    artifact_dir_ = std::make_unique<ArtifactDir>(
        options_.artifact_dir.empty()
            ? absl::StrCat(DefaultDataDir(), "/client-artifacts")
            : options_.artifact_dir,
        options_.artifact_dir_max_bytes >= 0
            ? options_.artifact_dir_max_bytes
            : BudgetFromEnv("AOTCACHE_ARTIFACT_DIR_MAX_SIZE",
                            int64_t{1} << 30));
  }
}

Client::InProcessBackend Client::in_process_backend() {
  absl::MutexLock lock(&backend_mu_);
  if (in_process_ == nullptr) {
    // The user's own graphs: no sandbox.
    absl::StatusOr<std::unique_ptr<Backend>> backend = ChooseBackend(
        "auto",
        [] {
          return NativeBackend::CreateChecked(HostCompilerFromEnvironment());
        },
        &why_reference_);
    if (backend.ok()) {
      in_process_ = *std::move(backend);
    } else {
      in_process_ = std::make_unique<ReferenceBackend>();
      why_reference_ = std::string(backend.status().message());
    }
  }
  return {in_process_.get(), why_reference_};
}

ClientCounters Client::counters() const {
  absl::MutexLock lock(&mu_);
  ClientCounters counters = counters_;
  if (daemon_.ok()) {
    counters.unavailable_retries = (*daemon_)->unavailable_retries();
  }
  return counters;
}

absl::StatusOr<const DaemonCalls*> Client::daemon() const {
  if (!daemon_.ok()) return daemon_.status();
  return daemon_->get();
}

absl::StatusOr<v1::Artifact> Client::LocalOrFetch(const std::string& digest) {
  absl::StatusOr<v1::Artifact> local = artifact_dir_->Get(digest);
  if (local.ok()) {
    absl::MutexLock lock(&mu_);
    ++counters_.local_artifact_hits;
    return local;
  }
  absl::StatusOr<std::string> fetched = (*daemon_)->FetchArtifact(digest);
  if (!fetched.ok()) return fetched.status();
  const std::string& bytes = *fetched;
  v1::Artifact artifact;
  if (!artifact.ParseFromString(bytes)) {
    return absl::DataLossError(
        absl::StrCat("artifact ", digest, " does not parse"));
  }
  (void)artifact_dir_->Put(digest, bytes);  // A full disk only costs a fetch.
  absl::MutexLock lock(&mu_);
  ++counters_.artifacts_fetched;
  counters_.bytes_fetched += static_cast<int64_t>(bytes.size());
  return artifact;
}

grpc::Status Client::CompileCall(grpc::ClientContext* context,
                                 const grpc::ByteBuffer& request,
                                 v1::CompileResponse* response) {
  static const std::string* const kMethod = new std::string(
      absl::StrCat("/", v1::CompileService::service_full_name(), "/Compile"));
  grpc::ByteBuffer answer;
  grpc::Status status;
  absl::Notification done;
  generic_stub_.UnaryCall(context, *kMethod, grpc::StubOptions(), &request,
                          &answer, [&](grpc::Status s) {
                            status = std::move(s);
                            done.Notify();
                          });
  done.WaitForNotification();
  if (!status.ok()) return status;
  return grpc::SerializationTraits<v1::CompileResponse>::Deserialize(&answer,
                                                                     response);
}

std::string Client::EnsureServer() {
  absl::MutexLock lock(&start_mu_);
  if (server_checked_) return server_problem_;
  server_checked_ = true;
  if (!is_default_daemon_ || !options_.start_daemon) return "";
  if (channel_->WaitForConnected(
          absl::ToChronoTime(absl::Now() + absl::Milliseconds(200)))) {
    return "";
  }
  absl::StatusOr<std::string> binary = FindAotcached(options_.daemon_binary);
  absl::Status started = binary.ok()
                             ? LaunchDetachedDaemon(*binary, DefaultDataDir(),
                                                    options_.daemon_idle_exit)
                             : binary.status();
  if (started.ok() && channel_->WaitForConnected(absl::ToChronoTime(
                          absl::Now() + absl::Seconds(10)))) {
    return "";
  }
  server_problem_ = absl::StrCat(
      "no daemon at ", target_, " and none could be started: ",
      started.ok() ? "it did not answer within 10 s (see aotcached.log)"
                   : started.message());
  return server_problem_;
}

absl::StatusOr<std::unique_ptr<CompiledFunction>> Client::LoadServed(
    v1::CompileResponse& response) {
  if (response.has_forward()) {
    return CompiledFunction::Load(response.forward(), response.metadata());
  }
  std::string id = absl::StrCat(response.key(), response.forward_digest());
  {
    absl::MutexLock lock(&mu_);
    auto it = loaded_forwards_.find(id);
    if (it != loaded_forwards_.end()) {
      ++counters_.loaded_forward_reuses;
      return it->second->ShareForward();
    }
  }
  absl::StatusOr<v1::Artifact> forward =
      LocalOrFetch(response.forward_digest());
  if (!forward.ok()) return forward.status();
  absl::StatusOr<std::unique_ptr<CompiledFunction>> function =
      CompiledFunction::Load(*forward, response.metadata());
  if (!function.ok()) return function.status();
  absl::MutexLock lock(&mu_);
  if (loaded_forwards_.size() >= kMaxLoadedForwards) loaded_forwards_.clear();
  loaded_forwards_.emplace(std::move(id), (*function)->ShareForward());
  return function;
}

absl::StatusOr<std::unique_ptr<CachedFunction>> Client::Compile(
    const v1::Graph& graph, const v1::CompileOptions& options) {
  auto f = absl::WrapUnique(new CachedFunction());
  f->client_ = this;
  // Deterministic bytes: the daemon answers bytes it has seen before
  // without decoding them.
  v1::CompileRequestFrame frame;
  frame.set_graph(DeterministicBytes(graph));
  frame.set_options(DeterministicBytes(options));
  frame.set_target(host_target_bytes_);
  frame.set_artifacts_by_reference(artifact_dir_ != nullptr);
  f->request_bytes_ = DeterministicBytes(frame);

  if (!daemon_.ok()) return daemon_.status();
  std::string problem = EnsureServer();
  if (problem.empty()) {
    grpc::Slice slice(f->request_bytes_);
    grpc::ByteBuffer request(&slice, 1);
    v1::CompileResponse response;
    grpc::Status status = (*daemon_)->Unary([&](grpc::ClientContext* context) {
      return CompileCall(context, request, &response);
    });
    if (!status.ok() && !ShouldCompileInProcess(status.error_code())) {
      return FromGrpc(status);
    }
    absl::Status unserved = FromGrpc(status);
    if (status.ok()) {
      absl::StatusOr<std::unique_ptr<CompiledFunction>> function =
          LoadServed(response);
      if (function.ok()) {
        f->key_ = response.key();
        f->status_ = response.status();
        f->mode_ = response.mode();
        f->bypass_reason_ = response.bypass_reason();
        f->server_backward_ready_ =
            response.backward() == v1::BACKWARD_STATE_READY;
        f->function_ = *std::move(function);
        if (f->mode_ == v1::MODE_TRAINING && f->server_backward_ready_) {
          f->PrefetchBackward();
        }
        return f;
      }
      if (absl::IsInvalidArgument(function.status())) return function.status();
      unserved = function.status();  // The artifact did not arrive.
    }
    // Unreachable, over its limits, or the artifact did not arrive.
    problem = absl::StrCat(target_, ": ", unserved.message());
    if (is_default_daemon_ &&
        (absl::IsUnavailable(unserved) || absl::IsCancelled(unserved))) {
      // The default daemon answered before and is gone now (it exits when
      // idle): look for it, or start it, again next time.
      absl::MutexLock lock(&start_mu_);
      server_checked_ = false;
    }
  }
  f->source_ = Source::kInProcess;
  f->fallback_reason_ = problem;
  absl::StatusOr<CompilePlan> plan = PlanInProcess(f->DecodedRequest());
  if (!plan.ok()) return plan.status();
  absl::StatusOr<v1::Artifact> forward =
      CompileForward(*plan, *in_process_backend().backend, HostTarget());
  if (!forward.ok()) return forward.status();
  f->mode_ =
      plan->backward_graph.has_value() ? v1::MODE_TRAINING : v1::MODE_INFERENCE;
  absl::StatusOr<std::unique_ptr<CompiledFunction>> function =
      CompiledFunction::Load(*forward, plan->metadata);
  if (!function.ok()) return function.status();
  f->function_ = *std::move(function);
  return f;
}

absl::StatusOr<v1::Artifact> Client::FetchBackward(const CachedFunction& f) {
  if (f.source_ == Source::kServer) {
    v1::GetBackwardRequest request;
    request.set_key(f.key_);
    *request.mutable_request() = f.DecodedRequest();
    request.set_artifact_by_reference(artifact_dir_ != nullptr);
    v1::GetBackwardResponse response;
    grpc::Status status = (*daemon_)->Unary([&](grpc::ClientContext* context) {
      return (*daemon_)->compile().GetBackward(context, request, &response);
    });
    if (status.ok()) {
      if (response.has_backward())
        return std::move(*response.mutable_backward());
      return LocalOrFetch(response.backward_digest());
    }
    if (!ShouldCompileInProcess(status.error_code())) return FromGrpc(status);
  }
  // No server (any more): the same deterministic compile, here.
  absl::StatusOr<CompilePlan> plan = PlanInProcess(f.DecodedRequest());
  if (!plan.ok()) return plan.status();
  return CompileBackward(*plan, f.function_->forward_artifact(),
                         *in_process_backend().backend, HostTarget());
}

v1::CompileRequest CachedFunction::DecodedRequest() const {
  v1::CompileRequest request;
  // Encoded by Client::Compile: it decodes.
  (void)request.ParseFromString(request_bytes_);
  return request;
}

CachedFunction::~CachedFunction() {
  if (prefetch_.joinable()) prefetch_.join();
}

void CachedFunction::PrefetchBackward() {
  prefetch_ = std::thread([this] { (void)EnsureBackward(); });
}

absl::Status CachedFunction::EnsureBackward() {
  absl::MutexLock lock(&mu_);
  if (backward_attached_) return absl::OkStatus();
  if (mode_ != v1::MODE_TRAINING) {
    return absl::FailedPreconditionError(
        "an inference function has no backward");
  }
  absl::StatusOr<v1::Artifact> backward = client_->FetchBackward(*this);
  if (!backward.ok()) return backward.status();
  absl::Status attached = function_->AttachBackward(*backward);
  if (!attached.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the backward from ", client_->target(),
        " cannot run with this forward (a server of another build, or "
        "kernels for a later CPU level): ",
        attached.message()));
  }
  backward_attached_ = true;
  return absl::OkStatus();
}

v1::BackwardState CachedFunction::backward_state() {
  if (mode_ != v1::MODE_TRAINING) return v1::BACKWARD_STATE_NONE;
  absl::MutexLock lock(&mu_);
  return backward_attached_ || server_backward_ready_
             ? v1::BACKWARD_STATE_READY
             : v1::BACKWARD_STATE_PENDING;
}

absl::StatusOr<CompiledFunction::Gradients> CachedFunction::Backward(
    const std::vector<Tensor>& saved, const std::vector<Tensor>& tangents) {
  absl::Status ready = EnsureBackward();
  if (!ready.ok()) return ready;
  return function_->Backward(saved, tangents);
}

}  // namespace aotcache
