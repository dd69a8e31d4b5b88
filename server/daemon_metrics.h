// DaemonMetrics: what /metrics exports, in Prometheus' text format --
//  - every RPC once it answers, by RPC, status code and caller (the grant's
//    name from the tokens file, "local", "anonymous" or "unauthenticated":
//    as many as the tokens file has lines), and its latency by RPC, recorded
//    by a gRPC interceptor (CallRecorderFactory);
//  - Compile's answers by mode, status, bypass reason and caller (a
//    caller's hit rate), and the seconds the forwards compiled now took;
//  - the daemon's counters and the store's size as `aotcache stats` shows
//    them (StatsSnapshot, rendered at each scrape, so the two agree).
// Thread-safety: thread-safe.
#ifndef AOTCACHE_SERVER_DAEMON_METRICS_H_
#define AOTCACHE_SERVER_DAEMON_METRICS_H_

#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "aotcache/v1/service.pb.h"
#include "core/cache/cache_results.h"
#include "grpcpp/support/server_interceptor.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/access_control.h"

namespace aotcache {

class DaemonMetrics {
 public:
  DaemonMetrics();
  DaemonMetrics(const DaemonMetrics&) = delete;
  DaemonMetrics& operator=(const DaemonMetrics&) = delete;

  // `rpc` as gRPC names it ("/aotcache.v1.CompileService/Compile").
  void RecordCall(absl::string_view rpc, grpc::StatusCode code,
                  absl::string_view caller, double seconds);
  // A Compile answered with `result` to `caller`.
  void RecordCompile(const CompileResult& result, absl::string_view caller);

  // The text a scrape gets: the recorded families, then `stats`'.
  std::string Render(const v1::StatsResponse& stats) const;

  // Records every call to the server it is given to; `access` names the
  // callers. Both must outlive the server.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
  CallRecorderFactory(const AccessControl* access);

 private:
  prometheus::Registry registry_;
  prometheus::Family<prometheus::Counter>& calls_;
  prometheus::Family<prometheus::Histogram>& call_seconds_;
  prometheus::Family<prometheus::Counter>& compiles_;
  prometheus::Histogram& compile_seconds_;
};

}  // namespace aotcache

#endif  // AOTCACHE_SERVER_DAEMON_METRICS_H_
