// Hit latency: what a client pays for a cache hit from aotcached, beside a
// bare gRPC round trip over loopback that carries the same bytes each way
// and does no work, measured in the same run (these machines are shared and
// noisy: compare the ratios, not the absolute times).
//
// For 1 and 8 client threads, each for --seconds: p50 and p99 latency and
// throughput of
//   echo sync     a bare echo, request and response sized as the hit's, on
//                 gRPC's synchronous API
//   echo callback the same on the callback API (which aotcached's Compile
//                 uses); the baseline of each column is the better echo
//   hit inline    Compile, the artifact in the answer
//   hit by digest Compile answered by digest (what aotcache::Client asks)
//   client hit    aotcache::Client::Compile: by digest, the artifact from
//                 the local artifact dir, loaded and ready to run
//   tls hit       "hit by digest" with a token over TLS, from a second
//                 daemon with a tokens file and a certificate (made by the
//                 openssl CLI); its ratio is against "hit by digest"
//   tls client    "client hit" with a token over TLS; against "client hit"
// on tests/fixtures/graphs/assorted_ops__rg.json (61 nodes, training).
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/cli/read_graph.h"
#include "client/cpp/client.h"
#include "core/key/digest.h"
#include "core/key/target.h"
#include "echo.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "server/daemon.h"
#include "tests/testing/test_certificates.h"

namespace aotcache {
namespace {

class SyncEcho final : public bench::Echo::Service {
  grpc::Status Echo(grpc::ServerContext*, const bench::EchoRequest* request,
                    bench::EchoResponse* response) override {
    response->mutable_payload()->assign(
        static_cast<size_t>(request->response_bytes()), 'x');
    return grpc::Status::OK;
  }
};

class CallbackEcho final : public bench::Echo::CallbackService {
  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context,
                                 const bench::EchoRequest* request,
                                 bench::EchoResponse* response) override {
    response->mutable_payload()->assign(
        static_cast<size_t>(request->response_bytes()), 'x');
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

// A server for `service` on a loopback port, and a stub to it.
struct EchoServer {
  explicit EchoServer(grpc::Service* service) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(service);
    server = builder.BuildAndStart();
    stub = bench::Echo::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }
  ~EchoServer() { server->Shutdown(); }

  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<bench::Echo::Stub> stub;
};

struct Result {
  double p50_us = 0, p99_us = 0, per_second = 0;
};

// Runs `call` from `threads` threads for `seconds`; each thread's first
// 20 calls warm up and are not counted.
Result Measure(int threads, double seconds, const std::function<void()>& call) {
  std::vector<std::vector<double>> latencies(threads);
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) call();
      while (!stop) {
        auto start = std::chrono::steady_clock::now();
        call();
        latencies[t].push_back(std::chrono::duration<double, std::micro>(
                                   std::chrono::steady_clock::now() - start)
                                   .count());
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (std::thread& w : workers) w.join();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  Result r;
  if (all.empty()) return r;
  r.p50_us = all[all.size() / 2];
  r.p99_us = all[std::min(all.size() - 1, all.size() * 99 / 100)];
  r.per_second = static_cast<double>(all.size()) / seconds;
  return r;
}

int Run(double seconds, const std::string& only) {
  std::string tmpl = "/tmp/aotcache_bench_XXXXXX";
  std::string dir = mkdtemp(tmpl.data());
  DaemonOptions options;
  options.data_dir = dir + "/daemon";
  auto daemon = Daemon::Start(options);
  if (!daemon.ok()) {
    std::fprintf(stderr, "%s\n", daemon.status().ToString().c_str());
    return 1;
  }
  // The same daemon behind TLS and a token.
  absl::StatusOr<testing::TestCertificates> certs =
      testing::MakeTestCertificates(dir);
  if (!certs.ok()) {
    std::fprintf(stderr, "%s\n", certs.status().ToString().c_str());
    return 1;
  }
  const std::string token = "bench-token-0123456789";
  DaemonOptions tls_options;
  tls_options.data_dir = dir + "/tls-daemon";
  tls_options.tokens_file = dir + "/tokens";
  {
    std::FILE* tokens = std::fopen(tls_options.tokens_file.c_str(), "w");
    std::fprintf(tokens, "bench read,compile %s\n", Sha256Hex(token).c_str());
    std::fclose(tokens);
  }
  if (getenv("NO_TOKENS")) tls_options.tokens_file.clear();
  tls_options.tls.cert_file = certs->server.cert;
  tls_options.tls.key_file = certs->server.key;
  auto tls_daemon = Daemon::Start(tls_options);
  if (!tls_daemon.ok()) {
    std::fprintf(stderr, "%s\n", tls_daemon.status().ToString().c_str());
    return 1;
  }
  SyncEcho sync_echo_service;
  CallbackEcho callback_echo_service;
  EchoServer sync_echo(&sync_echo_service);
  EchoServer callback_echo(&callback_echo_service);
  std::string server = absl::StrCat("127.0.0.1:", (*daemon)->port());
  auto compile = v1::CompileService::NewStub(
      grpc::CreateChannel(server, grpc::InsecureChannelCredentials()));
  ClientOptions client_options;
  client_options.server = server;
  client_options.artifact_dir = dir + "/artifacts";
  Client client(client_options);
  ClientOptions tls_client_options = client_options;
  tls_client_options.server =
      absl::StrCat("tls://127.0.0.1:", (*tls_daemon)->port());
  tls_client_options.token = token;
  tls_client_options.ca_file = certs->ca;
  tls_client_options.artifact_dir = dir + "/tls-artifacts";
  Client tls_client(tls_client_options);
  grpc::SslCredentialsOptions tls_credentials;
  {
    std::FILE* ca = std::fopen(certs->ca.c_str(), "r");
    char buffer[4096];
    size_t n = std::fread(buffer, 1, sizeof(buffer), ca);
    std::fclose(ca);
    tls_credentials.pem_root_certs.assign(buffer, n);
  }
  auto tls_compile = v1::CompileService::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*tls_daemon)->port()),
                          grpc::SslCredentials(tls_credentials)));

  auto graph = ReadGraphFile(AOTCACHE_SOURCE_DIR
                             "/tests/fixtures/graphs/assorted_ops__rg.json");
  if (!graph.ok()) return 1;
  v1::CompileRequest inline_request;
  *inline_request.mutable_graph() = *graph;
  *inline_request.mutable_target() = HostTarget();
  v1::CompileRequest by_digest = inline_request;
  by_digest.set_artifacts_by_reference(true);
  // The misses, not measured.
  if (!client.Compile(*graph).ok() || !tls_client.Compile(*graph).ok()) {
    return 1;
  }

  auto hit_on = [&](v1::CompileService::Stub* stub,
                    const v1::CompileRequest& request, bool with_token) {
    grpc::ClientContext context;
    if (with_token) context.AddMetadata("authorization", "Bearer " + token);
    v1::CompileResponse response;
    grpc::Status status = stub->Compile(&context, request, &response);
    if (!status.ok() || response.status() != v1::COMPILE_STATUS_HIT) {
      std::fprintf(stderr, "not a hit: %s\n", status.error_message().c_str());
      std::abort();
    }
    return response;
  };
  auto hit = [&](const v1::CompileRequest& request) {
    return hit_on(compile.get(), request, false);
  };
  auto client_hit = [](Client& c, const v1::Graph& g) {
    auto f = c.Compile(g);
    if (!f.ok() || (*f)->status() != v1::COMPILE_STATUS_HIT) std::abort();
  };
  bench::EchoRequest echo_request;
  echo_request.set_payload(inline_request.SerializeAsString());
  echo_request.set_response_bytes(
      static_cast<int64_t>(hit(inline_request).ByteSizeLong()));
  std::printf(
      "graph: assorted_ops__rg.json, %d nodes; request %zu bytes, "
      "inline answer %lld bytes\n",
      graph->nodes_size(), echo_request.payload().size(),
      static_cast<long long>(echo_request.response_bytes()));

  auto echo = [&](EchoServer& server) {
    grpc::ClientContext context;
    bench::EchoResponse response;
    if (!server.stub->Echo(&context, echo_request, &response).ok()) {
      std::abort();
    }
  };
  struct Case {
    const char* name;
    std::function<void()> call;
    const char* against = nullptr;  // Its plaintext twin; else the echo.
  };
  std::vector<Case> cases = {
      {"echo sync", [&] { echo(sync_echo); }},
      {"echo callback", [&] { echo(callback_echo); }},
      {"hit inline", [&] { hit(inline_request); }},
      {"hit by digest", [&] { hit(by_digest); }},
      {"client hit", [&] { client_hit(client, *graph); }},
      {"tls hit", [&] { hit_on(tls_compile.get(), by_digest, true); },
       "hit by digest"},
      {"tls client", [&] { client_hit(tls_client, *graph); }, "client hit"},
  };
  for (int threads : {1, 8}) {
    std::printf("\n%d client thread%s, %.1f s each:\n", threads,
                threads == 1 ? "" : "s", seconds);
    std::printf("  %-14s %10s %10s %12s   %s\n", "", "p50 us", "p99 us",
                "calls/s", "vs the better echo: p50, throughput");
    constexpr int kEchoes = 2;  // The first two cases.
    Result base;
    std::map<std::string, Result> measured;
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      if (i >= kEchoes && !only.empty() && only != c.name) continue;
      Result r = Measure(threads, seconds, c.call);
      if (i < kEchoes) {
        base.p50_us = i == 0 ? r.p50_us : std::min(base.p50_us, r.p50_us);
        base.per_second = std::max(base.per_second, r.per_second);
        std::printf("  %-14s %10.1f %10.1f %12.0f\n", c.name, r.p50_us,
                    r.p99_us, r.per_second);
        continue;
      }
      measured[c.name] = r;
      if (c.against != nullptr && measured.count(c.against) != 0) {
        const Result& twin = measured[c.against];
        std::printf("  %-14s %10.1f %10.1f %12.0f   %.2fx, %.2fx of %s\n",
                    c.name, r.p50_us, r.p99_us, r.per_second,
                    r.p50_us / twin.p50_us, r.per_second / twin.per_second,
                    c.against);
        continue;
      }
      std::printf("  %-14s %10.1f %10.1f %12.0f   %.2fx, %.2fx\n", c.name,
                  r.p50_us, r.p99_us, r.per_second, r.p50_us / base.p50_us,
                  r.per_second / base.per_second);
    }
  }
  daemon->reset();
  tls_daemon->reset();
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace aotcache

int main(int argc, char** argv) {
  double seconds = 2;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--seconds=", 0) == 0) {
      seconds = std::atof(arg.c_str() + 10);
    } else if (arg.rfind("--only=", 0) == 0) {
      only = arg.substr(7);  // One case beside the echoes, to profile it.
    } else {
      std::fprintf(stderr,
                   "usage: hit_latency_bench [--seconds=2] [--only=CASE]\n");
      return 2;
    }
  }
  return aotcache::Run(seconds, only);
}
