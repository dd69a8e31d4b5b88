// aotcached: the aotcache daemon. Flags in --help; SIGTERM or SIGINT drains
// in-flight requests and exits 0; SIGHUP reads the tokens file again.
#include <csignal>
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "core/paths/byte_size.h"
#include "glog/logging.h"
#include "server/daemon.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:0",
          "host:port (port 0 picks a free port) or unix:PATH; the daemon also "
          "always serves a unix socket inside its data dir");
ABSL_FLAG(std::string, data_dir, "",
          "store and socket directory (default $XDG_CACHE_HOME/aotcache, else "
          "~/.cache/aotcache)");
ABSL_FLAG(std::string, backend, "auto",
          "the compiler backend: native, reference, or auto (native when the "
          "C++ compiler, $AOTCACHE_CXX else c++, builds a test kernel at "
          "startup)");
ABSL_FLAG(std::string, compiler_sandbox, "auto",
          "how the native backend confines the C++ compiler: auto (bubblewrap "
          "where it runs, else unconfined with a warning), bwrap (required), "
          "or none; address-space, file-size and CPU limits apply always");
ABSL_FLAG(int64_t, max_bytes_in_flight, int64_t{512} << 20,
          "request bytes held at once; more are refused (RESOURCE_EXHAUSTED)");
ABSL_FLAG(int64_t, max_request_bytes, int64_t{64} << 20,
          "largest request accepted");
ABSL_FLAG(int64_t, max_graph_nodes, 100000, "largest graph accepted, in nodes");
ABSL_FLAG(int64_t, min_free_bytes, int64_t{64} << 20,
          "below this many free bytes on the data dir's disk nothing is "
          "stored: answers are compiled, not stored (started below it, the "
          "store is served read-only)");
ABSL_FLAG(std::string, durability, "wal",
          "wal (default: a process crash loses nothing), sync (every write "
          "synced), none (no write-ahead log)");
ABSL_FLAG(std::string, compression, "zstd",
          "how artifacts are stored: zstd (when it makes them smaller) or "
          "none; either form is read");
ABSL_FLAG(int32_t, compression_level, 3, "zstd's level, 1 to 19");
ABSL_FLAG(std::string, http_listen, "",
          "host:port of /healthz, /readyz and /metrics (Prometheus; the "
          "admin scope with --tokens_file); HTTPS with --tls_cert; empty: "
          "none");
ABSL_FLAG(std::string, max_size, "",
          "the store's size (20G, 512MiB): past it the least recently used "
          "entries are evicted down to 90%; empty: unbounded");
ABSL_FLAG(std::string, max_size_hard_limit, "",
          "past it nothing new is stored (answered as bypass, \"cache "
          "full\"); default --max_size + 25%");
ABSL_FLAG(int64_t, idle_exit_seconds, 0,
          "exit after this long without a call (0: never); clients that "
          "start a daemon themselves set it");
ABSL_FLAG(int32_t, max_connections_per_peer, 64,
          "TCP connections held at once from one address; more are closed at "
          "once");
ABSL_FLAG(int32_t, max_connections, 1024,
          "TCP connections held at once in all (also at most half the "
          "open-file limit, which is raised to its hard limit at start)");
ABSL_FLAG(int64_t, idle_connection_seconds, 300,
          "a connection without a call for this long is closed; clients "
          "reconnect on their next call");
ABSL_FLAG(int64_t, handshake_seconds, 10,
          "a connection whose TLS or HTTP/2 handshake has not finished by "
          "then is closed");
ABSL_FLAG(int64_t, fetch_seconds, 120,
          "an artifact download (FetchArtifact) the client has not read to "
          "its end by then is cancelled");
ABSL_FLAG(std::string, tokens_file, "",
          "who may call over TCP: lines of NAME SCOPES CREDENTIAL, scopes "
          "read, compile, admin, the credential a token's SHA-256 (aotcache "
          "token makes both) or x509:ID for a client certificate; reread on "
          "SIGHUP. Empty: anyone who can connect may do anything");
ABSL_FLAG(bool, insecure_allow_anonymous, false,
          "let a listener on an address other than loopback serve callers "
          "without credentials (refused at start otherwise)");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain: the TCP listener speaks TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA certificates: TCP clients must present a certificate one "
          "of them signed (mTLS)");
ABSL_FLAG(int64_t, tls_reload_seconds, 60,
          "how often the TLS files are read again (renewed certificates are "
          "served without a restart)");
ABSL_FLAG(int64_t, drain_seconds, 30,
          "on SIGTERM, how long in-flight requests may take");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "aotcached: the aotcache compilation cache daemon");
  absl::ParseCommandLine(argc, argv);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;  // systemd, containers and scripts/run read it.
  aotcache::DaemonOptions options;
  options.backend_name = absl::GetFlag(FLAGS_backend);
  options.compiler_sandbox = absl::GetFlag(FLAGS_compiler_sandbox);
  options.listen = absl::GetFlag(FLAGS_listen);
  options.data_dir = absl::GetFlag(FLAGS_data_dir);
  if (options.data_dir.empty()) options.data_dir = aotcache::DefaultDataDir();
  options.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  options.max_bytes_in_flight = absl::GetFlag(FLAGS_max_bytes_in_flight);
  options.max_graph_nodes = absl::GetFlag(FLAGS_max_graph_nodes);
  options.min_free_bytes = absl::GetFlag(FLAGS_min_free_bytes);
  options.connections.max_per_peer =
      absl::GetFlag(FLAGS_max_connections_per_peer);
  options.connections.max_total = absl::GetFlag(FLAGS_max_connections);
  options.idle_connection_timeout =
      std::chrono::seconds(absl::GetFlag(FLAGS_idle_connection_seconds));
  options.handshake_timeout =
      std::chrono::seconds(absl::GetFlag(FLAGS_handshake_seconds));
  options.fetch_time_limit =
      std::chrono::seconds(absl::GetFlag(FLAGS_fetch_seconds));
  options.tokens_file = absl::GetFlag(FLAGS_tokens_file);
  options.http_listen = absl::GetFlag(FLAGS_http_listen);
  options.insecure_allow_anonymous =
      absl::GetFlag(FLAGS_insecure_allow_anonymous);
  options.tls.cert_file = absl::GetFlag(FLAGS_tls_cert);
  options.tls.key_file = absl::GetFlag(FLAGS_tls_key);
  options.tls.client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  options.tls.reload_interval =
      std::chrono::seconds(absl::GetFlag(FLAGS_tls_reload_seconds));
  const std::string compression = absl::GetFlag(FLAGS_compression);
  options.compression.zstd = compression == "zstd";
  options.compression.level = absl::GetFlag(FLAGS_compression_level);
  if ((compression != "zstd" && compression != "none") ||
      options.compression.level < 1 || options.compression.level > 19) {
    std::fprintf(stderr,
                 "aotcached: --compression must be zstd or none, "
                 "--compression_level 1 to 19\n");
    return 2;
  }
  // A size flag into `out`; false (said) when it is no size.
  auto parse_size = [](const char* name, const std::string& text,
                       int64_t* out) {
    if (text.empty()) return true;
    absl::StatusOr<int64_t> bytes = aotcache::ParseByteSize(text);
    if (!bytes.ok()) {
      std::fprintf(stderr, "aotcached: --%s: %s\n", name,
                   std::string(bytes.status().message()).c_str());
      return false;
    }
    *out = *bytes;
    return true;
  };
  if (!parse_size("max_size", absl::GetFlag(FLAGS_max_size),
                  &options.max_size) ||
      !parse_size("max_size_hard_limit",
                  absl::GetFlag(FLAGS_max_size_hard_limit),
                  &options.max_size_hard_limit)) {
    return 2;
  }
  std::string durability = absl::GetFlag(FLAGS_durability);
  if (durability == "sync") {
    options.durability = aotcache::Durability::kSync;
  } else if (durability == "none") {
    options.durability = aotcache::Durability::kNoWal;
  } else if (durability != "wal") {
    std::fprintf(stderr, "aotcached: --durability must be wal, sync or none\n");
    return 2;
  }

  // Signals are taken by sigwait below, not by handlers.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto daemon = aotcache::Daemon::Start(options);
  if (!daemon.ok()) {
    LOG(ERROR) << daemon.status().message();
    return 1;
  }
  if ((*daemon)->port() != 0) {
    std::printf("aotcached listening on %s (port %d) and unix:%s\n",
                options.listen.c_str(), (*daemon)->port(),
                (*daemon)->socket_path().c_str());
  } else if (!options.listen.empty()) {
    std::printf("aotcached listening on %s and unix:%s\n",
                options.listen.c_str(), (*daemon)->socket_path().c_str());
  } else {
    std::printf("aotcached listening on unix:%s\n",
                (*daemon)->socket_path().c_str());
  }
  if ((*daemon)->http_port() != 0) {
    std::printf(
        "aotcached metrics on %s://%s:%d/metrics\n",
        options.tls.cert_file.empty() ? "http" : "https",
        options.http_listen.substr(0, options.http_listen.rfind(':')).c_str(),
        (*daemon)->http_port());
  }
  LOG(INFO) << "backend: " << (*daemon)->backend_name();
  if (const std::string& damage = (*daemon)->store_recovery_damage();
      !damage.empty()) {
    LOG(ERROR) << "store damaged at open: " << damage
               << " (aotcache stats and verify report it until a restart)";
  }
  if (std::string problem = (*daemon)->store_write_problem();
      !problem.empty()) {
    LOG(WARNING) << "store not written (answers are compiled, not stored): "
                 << problem;
  }
  std::fflush(stdout);
  const absl::Duration idle_exit =
      absl::Seconds(absl::GetFlag(FLAGS_idle_exit_seconds));
  const timespec tick = {1, 0};
  int signal = -1;
  while (signal < 0) {
    signal = sigtimedwait(&signals, nullptr, &tick);
    if (signal == SIGHUP) {
      absl::Status reloaded = (*daemon)->ReloadTokens();
      if (reloaded.ok()) {
        LOG(INFO) << "SIGHUP: tokens file read again";
      } else {
        LOG(ERROR) << "SIGHUP: the tokens file in use stays: "
                   << reloaded.message();
      }
      signal = -1;
      continue;
    }
    if (signal < 0 && idle_exit > absl::ZeroDuration() &&
        (*daemon)->SinceLastCall() >= idle_exit) {
      LOG(INFO) << "idle for " << absl::FormatDuration(idle_exit)
                << ", exiting";
      break;
    }
  }
  if (signal >= 0) LOG(INFO) << "signal " << signal << ", draining";
  (*daemon)->Shutdown(std::chrono::seconds(absl::GetFlag(FLAGS_drain_seconds)));
  LOG(INFO) << "stopped";
  return 0;
}
