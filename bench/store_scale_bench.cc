// The store at scale: the hit path's latency (LookupHeader, HasArtifact,
// RecordHit: what a hit by digest reads and writes) at 1k entries and at
// --entries, the process's resident memory with the store open, and one
// eviction sweep to 90% of its size: how long it took and the longest any
// key's lock was held. Entries are filled straight into the store (each with
// an incompressible artifact of --artifact_bytes), not through a daemon.
// Then the same through a daemon: aotcached started over the store at each
// size, its Lookup RPC by random key over its unix socket (p50, p99), its
// start time and its resident memory.
//   build/bench/store_scale_bench --entries=1000000
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "core/key/digest.h"
#include "core/paths/byte_size.h"
#include "core/store/evictor.h"
#include "core/store/rocksdb_store.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

ABSL_FLAG(int64_t, entries, 1000000, "entries at the large scale");
ABSL_FLAG(int64_t, artifact_bytes, 1024, "each entry's artifact");
ABSL_FLAG(std::string, dir, "", "where to make the store (a temp dir)");
ABSL_FLAG(std::string, aotcached, AOTCACHED_PATH,
          "the daemon to measure over the store; empty: the store alone");

namespace aotcache {
namespace {

std::string KeyOf(int64_t i) {
  std::string key(32, '\0');
  for (int b = 0; b < 8; ++b) key[b] = static_cast<char>(i >> (8 * b));
  return key;
}

void PutEntry(RocksDbStore& store, int64_t i, size_t artifact_bytes) {
  std::string bytes(artifact_bytes, '\0');
  uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(i + 1);
  for (char& c : bytes) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  v1::CacheEntry e;
  e.set_key(KeyOf(i));
  e.set_mode(v1::MODE_INFERENCE);
  e.set_forward_digest(Sha256Hex(bytes));
  e.set_forward_bytes(static_cast<int64_t>(bytes.size()));
  absl::Status st = store.Put(e, {{e.forward_digest(), bytes}});
  if (!st.ok()) {
    std::fprintf(stderr, "put %lld: %s\n", static_cast<long long>(i),
                 st.ToString().c_str());
    std::exit(1);
  }
}

struct Latency {
  double p50_us = 0, p99_us = 0;
};

Latency Percentiles(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[us.size() * 99 / 100]};
}

int64_t ResidentBytes(const std::string& pid = "self") {
  std::ifstream status("/proc/" + pid + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

// The hit path on `samples` random keys among the first `n`.
Latency HitLatency(RocksDbStore& store, int64_t n, int samples) {
  std::mt19937_64 random(n);
  std::vector<double> us;
  us.reserve(samples);
  for (int s = 0; s < samples; ++s) {
    const std::string key = KeyOf(static_cast<int64_t>(random() % n));
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<v1::CacheEntryHeader> header = store.LookupHeader(key);
    const bool whole =
        header.ok() && store.HasArtifact(header->forward_digest());
    (void)store.RecordHit(key);
    us.push_back(std::chrono::duration<double, std::micro>(
                     std::chrono::steady_clock::now() - start)
                     .count());
    if (!whole) {
      std::fprintf(stderr, "entry missing\n");
      std::exit(1);
    }
  }
  return Percentiles(std::move(us));
}

struct DaemonNumbers {
  Latency lookup;
  double start_seconds = 0;
  int64_t resident_bytes = 0;
};

// Starts aotcached over `data_dir` (the store closed), measures `samples`
// Lookups of random keys among the first `n`, then stops it.
DaemonNumbers MeasureDaemon(const std::string& binary,
                            const std::string& data_dir, int64_t n,
                            int samples) {
  int out[2];
  if (pipe(out) != 0) std::exit(1);
  const absl::Time start = absl::Now();
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    const int null = open("/dev/null", O_WRONLY);  // Its log.
    if (null >= 0) dup2(null, STDERR_FILENO);
    const std::string dir_flag = "--data_dir=" + data_dir;
    execl(binary.c_str(), binary.c_str(), dir_flag.c_str(),
          "--listen=", "--backend=reference", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  // "aotcached listening on unix:PATH" once it serves.
  std::string line;
  char c;
  while (read(out[0], &c, 1) == 1 && c != '\n') line += c;
  DaemonNumbers numbers;
  numbers.start_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const size_t at = line.find("unix:");
  if (at == std::string::npos) {
    std::fprintf(stderr, "aotcached did not start: '%s'\n", line.c_str());
    std::exit(1);
  }
  auto stub = v1::CompileService::NewStub(
      grpc::CreateChannel(line.substr(at), grpc::InsecureChannelCredentials()));
  std::mt19937_64 random(n + 1);
  std::vector<double> us;
  us.reserve(samples);
  for (int s = 0; s < samples; ++s) {
    v1::LookupRequest request;
    request.set_key(KeyOf(static_cast<int64_t>(random() % n)));
    v1::LookupResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    const auto t0 = std::chrono::steady_clock::now();
    grpc::Status status = stub->Lookup(&context, request, &response);
    us.push_back(std::chrono::duration<double, std::micro>(
                     std::chrono::steady_clock::now() - t0)
                     .count());
    if (!status.ok()) {
      std::fprintf(stderr, "Lookup: %s\n", status.error_message().c_str());
      std::exit(1);
    }
  }
  numbers.lookup = Percentiles(std::move(us));
  numbers.resident_bytes = ResidentBytes(std::to_string(pid));
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  close(out[0]);
  return numbers;
}

int Run() {
  const int64_t entries = absl::GetFlag(FLAGS_entries);
  const size_t artifact_bytes = absl::GetFlag(FLAGS_artifact_bytes);
  std::string dir = absl::GetFlag(FLAGS_dir);
  if (dir.empty()) {
    dir = absl::StrCat(std::filesystem::temp_directory_path().string(),
                       "/store_scale_bench.", getpid());
  }
  std::filesystem::create_directories(dir);
  StoreOptions options;
  options.path = dir + "/store";
  auto opened = RocksDbStore::Open(options);
  if (!opened.ok()) {
    std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
    return 1;
  }
  RocksDbStore& store = **opened;
  constexpr int kSamples = 20000;
  constexpr int64_t kSmall = 1000;
  for (int64_t i = 0; i < kSmall; ++i) PutEntry(store, i, artifact_bytes);
  (void)store.FlushHits();
  const Latency small = HitLatency(store, kSmall, kSamples);
  const std::string daemon = absl::GetFlag(FLAGS_aotcached);
  DaemonNumbers small_daemon, large_daemon;
  // The daemon opens the store itself: this process lets it go meanwhile.
  const auto measure_daemon = [&](int64_t n, DaemonNumbers* numbers) {
    if (daemon.empty()) return;
    opened->reset();
    *numbers = MeasureDaemon(daemon, dir, n, kSamples);
    opened = RocksDbStore::Open(options);
    if (!opened.ok()) std::exit(1);
  };
  measure_daemon(kSmall, &small_daemon);

  const absl::Time fill_start = absl::Now();
  for (int64_t i = kSmall; i < entries; ++i)
    PutEntry(**opened, i, artifact_bytes);
  const double fill_seconds = absl::ToDoubleSeconds(absl::Now() - fill_start);
  const Latency large = HitLatency(**opened, entries, kSamples);
  const int64_t rss = ResidentBytes();
  measure_daemon(entries, &large_daemon);
  RocksDbStore& store_now = **opened;

  const RocksDbStore::Usage before = store_now.usage();
  EvictionGoal goal;
  goal.to_bytes = before.bytes / 10 * 9;
  const absl::Time sweep_start = absl::Now();
  absl::StatusOr<EvictionReport> report = Evict(store_now, goal);
  const double sweep_seconds = absl::ToDoubleSeconds(absl::Now() - sweep_start);
  if (!report.ok()) {
    std::fprintf(stderr, "%s\n", report.status().ToString().c_str());
    return 1;
  }

  std::printf("store: %lld entries, %s (filled in %.1f s)\n",
              static_cast<long long>(before.entries),
              FormatByteSize(before.bytes).c_str(), fill_seconds);
  std::printf("hit path p50: %.1f us at 1k, %.1f us at %lld (%.2fx)\n",
              small.p50_us, large.p50_us, static_cast<long long>(entries),
              large.p50_us / small.p50_us);
  std::printf("hit path p99: %.1f us at 1k, %.1f us at %lld (%.2fx; goal 2x)\n",
              small.p99_us, large.p99_us, static_cast<long long>(entries),
              large.p99_us / small.p99_us);
  std::printf("resident memory with the store open: %s (goal 512 MiB)\n",
              FormatByteSize(rss).c_str());
  std::printf(
      "sweep to 90%%: %lld entries evicted, %lld access records read, "
      "%.1f s; longest lock held %.3f ms (goal 10 ms)\n",
      static_cast<long long>(report->entries),
      static_cast<long long>(report->scanned), sweep_seconds,
      absl::ToDoubleMilliseconds(report->longest_lock));
  if (!daemon.empty()) {
    std::printf(
        "daemon Lookup p50: %.1f us at 1k, %.1f us at %lld (%.2fx)\n"
        "daemon Lookup p99: %.1f us at 1k, %.1f us at %lld (%.2fx; goal 2x)\n"
        "daemon: serving in %.2f s at 1k, %.2f s at %lld; resident memory "
        "%s at 1k, %s at %lld (goal 512 MiB)\n",
        small_daemon.lookup.p50_us, large_daemon.lookup.p50_us,
        static_cast<long long>(entries),
        large_daemon.lookup.p50_us / small_daemon.lookup.p50_us,
        small_daemon.lookup.p99_us, large_daemon.lookup.p99_us,
        static_cast<long long>(entries),
        large_daemon.lookup.p99_us / small_daemon.lookup.p99_us,
        small_daemon.start_seconds, large_daemon.start_seconds,
        static_cast<long long>(entries),
        FormatByteSize(small_daemon.resident_bytes).c_str(),
        FormatByteSize(large_daemon.resident_bytes).c_str(),
        static_cast<long long>(entries));
  }
  opened->reset();
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace aotcache

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return aotcache::Run();
}
