#include "server/daemon_metrics.h"

#include <chrono>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "prometheus/text_serializer.h"

namespace aotcache {
namespace {

// Latencies from 100 us to about 100 s, by factors of 2.5.
const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const auto* bounds = [] {
    auto* b = new prometheus::Histogram::BucketBoundaries();
    for (double bound = 1e-4; bound < 120; bound *= 2.5) b->push_back(bound);
    return b;
  }();
  return *bounds;
}

std::string CodeName(grpc::StatusCode code) {
  static constexpr const char* kNames[] = {"OK",
                                           "CANCELLED",
                                           "UNKNOWN",
                                           "INVALID_ARGUMENT",
                                           "DEADLINE_EXCEEDED",
                                           "NOT_FOUND",
                                           "ALREADY_EXISTS",
                                           "PERMISSION_DENIED",
                                           "RESOURCE_EXHAUSTED",
                                           "FAILED_PRECONDITION",
                                           "ABORTED",
                                           "OUT_OF_RANGE",
                                           "UNIMPLEMENTED",
                                           "INTERNAL",
                                           "UNAVAILABLE",
                                           "DATA_LOSS",
                                           "UNAUTHENTICATED"};
  const int i = static_cast<int>(code);
  return i >= 0 && i < 17 ? kNames[i] : absl::StrCat(i);
}

const char* ModeName(v1::Mode mode) {
  switch (mode) {
    case v1::MODE_INFERENCE:
      return "inference";
    case v1::MODE_TRAINING:
      return "training";
    default:
      return "unspecified";
  }
}

const char* StatusName(ForwardStatus status) {
  switch (status) {
    case ForwardStatus::kHit:
      return "hit";
    case ForwardStatus::kMiss:
      return "miss";
    case ForwardStatus::kBypass:
      return "bypass";
  }
  return "unspecified";
}

// One sample of a family made at scrape time.
prometheus::MetricFamily OneSample(std::string name, std::string help,
                                   prometheus::MetricType type, double value) {
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  return {std::move(name), std::move(help), type, {metric}};
}

class CallRecorder final : public grpc::experimental::Interceptor {
 public:
  CallRecorder(grpc::experimental::ServerRpcInfo* info, DaemonMetrics* metrics,
               const AccessControl* access)
      : info_(info),
        metrics_(metrics),
        access_(access),
        start_(std::chrono::steady_clock::now()) {}

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      Grant caller;
      const bool known =
          access_->Identify(*info_->server_context(), &caller).ok();
      metrics_->RecordCall(info_->method(),
                           methods->GetSendStatus().error_code(),
                           known ? caller.name : "unauthenticated",
                           std::chrono::duration<double>(
                               std::chrono::steady_clock::now() - start_)
                               .count());
    }
    methods->Proceed();
  }

 private:
  grpc::experimental::ServerRpcInfo* info_;
  DaemonMetrics* metrics_;
  const AccessControl* access_;
  const std::chrono::steady_clock::time_point start_;
};

class CallRecorders final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  CallRecorders(DaemonMetrics* metrics, const AccessControl* access)
      : metrics_(metrics), access_(access) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new CallRecorder(info, metrics_, access_);
  }

 private:
  DaemonMetrics* metrics_;
  const AccessControl* access_;
};

}  // namespace

DaemonMetrics::DaemonMetrics()
    : calls_(prometheus::BuildCounter()
                 .Name("aotcache_rpc_calls_total")
                 .Help("Calls answered, by RPC, status code and caller")
                 .Register(registry_)),
      call_seconds_(prometheus::BuildHistogram()
                        .Name("aotcache_rpc_seconds")
                        .Help("Time from a call's start to its answer, by RPC")
                        .Register(registry_)),
      compiles_(prometheus::BuildCounter()
                    .Name("aotcache_compile_answers_total")
                    .Help("Compile answers by mode, status, bypass reason "
                          "and caller")
                    .Register(registry_)),
      compile_seconds_(
          prometheus::BuildHistogram()
              .Name("aotcache_forward_compile_seconds")
              .Help("Seconds the forwards compiled by this daemon took")
              .Register(registry_)
              .Add({}, LatencyBuckets())) {}

void DaemonMetrics::RecordCall(absl::string_view rpc, grpc::StatusCode code,
                               absl::string_view caller, double seconds) {
  const size_t slash = rpc.rfind('/');
  const std::string method(
      slash == absl::string_view::npos ? rpc : rpc.substr(slash + 1));
  calls_
      .Add({{"rpc", method},
            {"code", CodeName(code)},
            {"caller", std::string(caller)}})
      .Increment();
  call_seconds_.Add({{"rpc", method}}, LatencyBuckets()).Observe(seconds);
}

void DaemonMetrics::RecordCompile(const CompileResult& result,
                                  absl::string_view caller) {
  compiles_
      .Add({{"mode", ModeName(result.mode)},
            {"status", StatusName(result.status)},
            {"reason", result.bypass_reason},
            {"caller", std::string(caller)}})
      .Increment();
  if (result.status == ForwardStatus::kMiss && !result.shared_compile) {
    compile_seconds_.Observe(result.compile_seconds);
  }
}

std::string DaemonMetrics::Render(const v1::StatsResponse& s) const {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> families = registry_.Collect();
  const auto counter = [&](const char* name, const char* help, double value) {
    families.push_back(OneSample(name, help, MetricType::Counter, value));
  };
  const auto gauge = [&](const char* name, const char* help, double value) {
    families.push_back(OneSample(name, help, MetricType::Gauge, value));
  };
  counter("aotcache_hits_total", "Forwards served from the store", s.hits());
  counter("aotcache_misses_total", "Forwards compiled and stored", s.misses());
  prometheus::MetricFamily bypasses{
      "aotcache_bypasses_total",
      "Forwards compiled and not stored, by reason",
      MetricType::Counter,
      {}};
  for (const auto& [reason, n] : s.bypass_reasons()) {
    prometheus::ClientMetric metric;
    metric.label = {{"reason", reason}};
    metric.counter.value = static_cast<double>(n);
    bypasses.metric.push_back(std::move(metric));
  }
  families.push_back(std::move(bypasses));
  counter("aotcache_misses_not_compiled_total",
          "Misses answered NOT_FOUND: the caller may not compile",
          s.misses_not_compiled());
  counter("aotcache_backward_compiles_total", "Backwards compiled",
          s.backward_compiles());
  counter("aotcache_backward_hits_total", "Backwards served",
          s.backward_hits());
  counter("aotcache_saves_total", "Entries stored", s.saves());
  counter("aotcache_save_failures_total",
          "Entries the store did not take (answered anyway)",
          s.save_failures());
  counter("aotcache_corrupt_artifacts_total",
          "Stored artifacts that failed their digest (dropped)",
          s.corrupt_artifacts());
  counter("aotcache_remembered_failures_total",
          "Compiles answered with a failure remembered for their key",
          s.remembered_failures());
  counter("aotcache_compile_seconds_saved_total",
          "Compile seconds the hits did not spend", s.compile_seconds_saved());
  counter("aotcache_artifact_bytes_written_total",
          "Artifact bytes stored since the daemon started",
          s.artifact_bytes_written());
  counter("aotcache_artifact_bytes_at_rest_total",
          "What those bytes take at rest (compressed)",
          s.artifact_bytes_at_rest());
  gauge("aotcache_store_bytes",
        "The store's size: its entries and artifacts as stored",
        s.store_bytes());
  gauge("aotcache_store_entries", "Entries in the store", s.store_entries());
  gauge("aotcache_store_max_bytes", "--max_size (0: none)", s.max_size());
  gauge("aotcache_store_hard_limit_bytes", "--max_size_hard_limit (0: none)",
        s.max_size_hard_limit());
  gauge("aotcache_store_writable",
        "1 while the store takes writes, 0 when not (disk full)",
        s.store_write_problem().empty() ? 1 : 0);
  counter("aotcache_evicted_entries_total", "Entries evicted",
          s.evicted_entries());
  counter("aotcache_evicted_bytes_total", "Bytes evicted", s.evicted_bytes());
  counter("aotcache_eviction_sweeps_total", "Sweeps --max_size started",
          s.eviction_sweeps());
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text, families);
  return text.str();
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
DaemonMetrics::CallRecorderFactory(const AccessControl* access) {
  return std::make_unique<CallRecorders>(this, access);
}

}  // namespace aotcache
