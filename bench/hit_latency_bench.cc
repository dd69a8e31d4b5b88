// Hit latency: what a client pays for a cache hit from aotcached, beside a
// bare gRPC round trip over the same loopback connection that carries the
// same bytes each way and does no work (measured in the same run, since
// these machines are shared and noisy).
//
//   BM_Echo            the baseline: request and response sized as the hit's
//   BM_HitInline       Compile with the artifact inline in the answer
//   BM_HitByReference  Compile answered by digest (what the client sends)
//   BM_ClientHit       aotcache::Client::Compile: by digest, the artifact
//                      from the local artifact dir, loaded to run
//
// Graphs: /0 examples/mlp.json (7 nodes), /1 a chain of 1,000 adds.
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "client/cli/read_graph.h"
#include "client/cpp/client.h"
#include "core/key/host_target.h"
#include "echo.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "server/daemon.h"

namespace aotcache {
namespace {

class EchoService final : public bench::Echo::Service {
  grpc::Status Echo(grpc::ServerContext*, const bench::EchoRequest* request,
                    bench::EchoResponse* response) override {
    response->mutable_payload()->assign(
        static_cast<size_t>(request->response_bytes()), 'x');
    return grpc::Status::OK;
  }
};

v1::Graph ChainGraph(int nodes) {
  v1::Graph graph;
  v1::Input* x = graph.add_inputs();
  x->set_name("x");
  x->mutable_meta()->add_shape(16);
  x->mutable_meta()->set_dtype(v1::DTYPE_FLOAT32);
  x->mutable_meta()->set_is_leaf(true);
  std::string previous = "x";
  for (int i = 0; i < nodes; ++i) {
    v1::Node* node = graph.add_nodes();
    node->set_name(absl::StrCat("add", i));
    node->set_op("aten.add.Tensor");
    node->add_args()->set_node(previous);
    node->add_args()->set_node("x");
    node->set_grad_mode(v1::GRAD_MODE_ENABLED);
    previous = node->name();
  }
  graph.add_outputs(previous);
  return graph;
}

// One daemon, one echo server and their channels for the whole run.
struct World {
  World() {
    std::string tmpl = "/tmp/aotcache_bench_XXXXXX";
    dir = mkdtemp(tmpl.data());
    DaemonOptions options;
    options.data_dir = dir + "/daemon";
    daemon = *Daemon::Start(options);
    grpc::ServerBuilder builder;
    int echo_port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &echo_port);
    builder.RegisterService(&echo_service);
    echo_server = builder.BuildAndStart();
    echo = bench::Echo::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", echo_port),
                            grpc::InsecureChannelCredentials()));
    std::string server = absl::StrCat("127.0.0.1:", daemon->port());
    compile = v1::CompileService::NewStub(
        grpc::CreateChannel(server, grpc::InsecureChannelCredentials()));
    ClientOptions client_options;
    client_options.server = server;
    client_options.artifact_dir = dir + "/artifacts";
    client = std::make_unique<Client>(client_options);
    graphs[0] = *ReadGraphFile(AOTCACHE_SOURCE_DIR "/examples/mlp.json");
    graphs[1] = ChainGraph(1000);
    for (auto& [index, graph] : graphs) {
      v1::CompileRequest& r = requests[index];
      *r.mutable_graph() = graph;
      *r.mutable_target() = HostTarget();
      (void)client->Compile(graph);  // The miss, before measuring.
    }
  }
  ~World() {
    echo_server->Shutdown();
    daemon.reset();
    std::filesystem::remove_all(dir);
  }

  std::string dir;
  std::unique_ptr<Daemon> daemon;
  EchoService echo_service;
  std::unique_ptr<grpc::Server> echo_server;
  std::unique_ptr<bench::Echo::Stub> echo;
  std::unique_ptr<v1::CompileService::Stub> compile;
  std::unique_ptr<Client> client;
  std::map<int, v1::Graph> graphs;
  std::map<int, v1::CompileRequest> requests;
};

World& TheWorld() {
  static World* world = new World();
  return *world;
}

v1::CompileResponse Hit(const v1::CompileRequest& request) {
  grpc::ClientContext context;
  v1::CompileResponse response;
  grpc::Status status =
      TheWorld().compile->Compile(&context, request, &response);
  if (!status.ok() || response.status() != v1::COMPILE_STATUS_HIT) {
    std::fprintf(stderr, "not a hit: %s\n", status.error_message().c_str());
    std::abort();
  }
  return response;
}

void BM_Echo(benchmark::State& state) {
  // The same bytes as the inline hit: the request, and the answer.
  v1::CompileRequest request = TheWorld().requests[state.range(0)];
  size_t response_bytes = Hit(request).ByteSizeLong();
  bench::EchoRequest echo;
  echo.set_payload(request.SerializeAsString());
  echo.set_response_bytes(static_cast<int64_t>(response_bytes));
  for (auto _ : state) {
    grpc::ClientContext context;
    bench::EchoResponse response;
    benchmark::DoNotOptimize(
        TheWorld().echo->Echo(&context, echo, &response).ok());
  }
  state.counters["request_bytes"] = static_cast<double>(echo.payload().size());
  state.counters["response_bytes"] = static_cast<double>(response_bytes);
}
BENCHMARK(BM_Echo)->Arg(0)->Arg(1)->UseRealTime()->Unit(
    benchmark::kMicrosecond);

void BM_HitInline(benchmark::State& state) {
  v1::CompileRequest request = TheWorld().requests[state.range(0)];
  for (auto _ : state) benchmark::DoNotOptimize(Hit(request));
}
BENCHMARK(BM_HitInline)
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_HitByReference(benchmark::State& state) {
  v1::CompileRequest request = TheWorld().requests[state.range(0)];
  request.set_artifacts_by_reference(true);
  for (auto _ : state) benchmark::DoNotOptimize(Hit(request));
}
BENCHMARK(BM_HitByReference)
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_ClientHit(benchmark::State& state) {
  const v1::Graph& graph = TheWorld().graphs[state.range(0)];
  for (auto _ : state) {
    auto f = TheWorld().client->Compile(graph);
    if (!f.ok() || (*f)->status() != v1::COMPILE_STATUS_HIT) std::abort();
  }
}
BENCHMARK(BM_ClientHit)
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs)
      times_[r.benchmark_name()] = r.GetAdjustedRealTime();
  }

  void PrintRatios() const {
    std::printf(
        "\nhit latency relative to a bare gRPC echo of the same bytes (same "
        "run):\n");
    const char* names[] = {"examples/mlp.json", "1,000-node chain"};
    for (int g : {0, 1}) {
      auto t = [&](const char* name) {
        auto it = times_.find(absl::StrCat(name, "/", g, "/real_time"));
        return it == times_.end() ? 0.0 : it->second;
      };
      double echo = t("BM_Echo");
      if (echo == 0) continue;
      std::printf(
          "  %-18s echo %7.1f us; inline hit %5.2fx, by digest %5.2fx, "
          "client hit %5.2fx\n",
          names[g], echo, t("BM_HitInline") / echo,
          t("BM_HitByReference") / echo, t("BM_ClientHit") / echo);
    }
  }

 private:
  std::map<std::string, double> times_;
};

}  // namespace
}  // namespace aotcache

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  aotcache::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}
