// The store at scale: the hit path's latency (LookupHeader, HasArtifact,
// RecordHit: what a hit by digest reads and writes) at 1k entries and at
// --entries, the process's resident memory with the store open, and one
// eviction sweep to 90% of its size: how long it took and the longest any
// key's lock was held. Entries are filled straight into the store (each with
// an incompressible artifact of --artifact_bytes), not through a daemon.
// Then the same through daemons: an aotcached over a store of 1k entries and
// one over --entries, running side by side, asked for random keys in turn
// over their unix sockets (Lookup: p50, p99), their start time and resident
// memory.
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

// An aotcached started over a data dir (whose store this process has
// closed), serving on its unix socket; stopped with SIGTERM on destruction.
class RunningDaemon {
 public:
  RunningDaemon(const std::string& binary, const std::string& data_dir) {
    int out[2];
    if (pipe(out) != 0) std::exit(1);
    const absl::Time start = absl::Now();
    pid_ = fork();
    if (pid_ == 0) {
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
    close(out[0]);
    start_seconds_ = absl::ToDoubleSeconds(absl::Now() - start);
    const size_t at = line.find("unix:");
    if (at == std::string::npos) {
      std::fprintf(stderr, "aotcached did not start: '%s'\n", line.c_str());
      std::exit(1);
    }
    stub_ = v1::CompileService::NewStub(grpc::CreateChannel(
        line.substr(at), grpc::InsecureChannelCredentials()));
  }
  ~RunningDaemon() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }

  // One Lookup; its latency in microseconds.
  double Lookup(const std::string& key) {
    v1::LookupRequest request;
    request.set_key(key);
    v1::LookupResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    const auto start = std::chrono::steady_clock::now();
    grpc::Status status = stub_->Lookup(&context, request, &response);
    const double us = std::chrono::duration<double, std::micro>(
                          std::chrono::steady_clock::now() - start)
                          .count();
    if (!status.ok()) {
      std::fprintf(stderr, "Lookup: %s\n", status.error_message().c_str());
      std::exit(1);
    }
    return us;
  }
  double start_seconds() const { return start_seconds_; }
  int64_t resident_bytes() const { return ResidentBytes(std::to_string(pid_)); }

 private:
  pid_t pid_ = -1;
  double start_seconds_ = 0;
  std::unique_ptr<v1::CompileService::Stub> stub_;
};

struct DaemonNumbers {
  Latency small, large;
  double small_start_seconds = 0, large_start_seconds = 0;
  int64_t small_resident = 0, large_resident = 0;
};

// Two daemons, over the small store and the large one, asked for random
// keys in turn (which goes first alternates), so that what else the machine
// does falls on both alike.
DaemonNumbers MeasureDaemons(const std::string& binary,
                             const std::string& small_dir, int64_t small_n,
                             const std::string& large_dir, int64_t large_n,
                             int samples) {
  RunningDaemon small(binary, small_dir);
  RunningDaemon large(binary, large_dir);
  std::mt19937_64 random(large_n);
  std::vector<double> small_us, large_us;
  for (int s = 0; s < samples; ++s) {
    const std::string small_key =
        KeyOf(static_cast<int64_t>(random() % small_n));
    const std::string large_key =
        KeyOf(static_cast<int64_t>(random() % large_n));
    if (s % 2 == 0) {
      small_us.push_back(small.Lookup(small_key));
      large_us.push_back(large.Lookup(large_key));
    } else {
      large_us.push_back(large.Lookup(large_key));
      small_us.push_back(small.Lookup(small_key));
    }
  }
  DaemonNumbers numbers;
  numbers.small = Percentiles(std::move(small_us));
  numbers.large = Percentiles(std::move(large_us));
  numbers.small_start_seconds = small.start_seconds();
  numbers.large_start_seconds = large.start_seconds();
  numbers.small_resident = small.resident_bytes();
  numbers.large_resident = large.resident_bytes();
  return numbers;
}

absl::StatusOr<std::unique_ptr<RocksDbStore>> OpenStore(
    const std::string& data_dir) {
  std::filesystem::create_directories(data_dir);
  StoreOptions options;
  options.path = data_dir + "/store";
  return RocksDbStore::Open(options);
}

int Run() {
  const int64_t entries = absl::GetFlag(FLAGS_entries);
  const size_t artifact_bytes = absl::GetFlag(FLAGS_artifact_bytes);
  std::string dir = absl::GetFlag(FLAGS_dir);
  if (dir.empty()) {
    dir = absl::StrCat(std::filesystem::temp_directory_path().string(),
                       "/store_scale_bench.", getpid());
  }
  const std::string small_dir = dir + "/small";
  const std::string large_dir = dir + "/large";
  constexpr int kSamples = 20000;
  constexpr int64_t kSmall = 1000;
  Latency small;
  {
    absl::StatusOr<std::unique_ptr<RocksDbStore>> store = OpenStore(small_dir);
    if (!store.ok()) {
      std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
      return 1;
    }
    for (int64_t i = 0; i < kSmall; ++i) PutEntry(**store, i, artifact_bytes);
    (void)(*store)->FlushHits();
    small = HitLatency(**store, kSmall, kSamples);
  }
  absl::StatusOr<std::unique_ptr<RocksDbStore>> store = OpenStore(large_dir);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 1;
  }
  const absl::Time fill_start = absl::Now();
  for (int64_t i = 0; i < entries; ++i) PutEntry(**store, i, artifact_bytes);
  const double fill_seconds = absl::ToDoubleSeconds(absl::Now() - fill_start);
  const Latency large = HitLatency(**store, entries, kSamples);
  const int64_t rss = ResidentBytes();

  // The daemons open the stores themselves: this process lets go meanwhile.
  const std::string daemon = absl::GetFlag(FLAGS_aotcached);
  DaemonNumbers daemons;
  if (!daemon.empty()) {
    store->reset();
    daemons =
        MeasureDaemons(daemon, small_dir, kSmall, large_dir, entries, kSamples);
    store = OpenStore(large_dir);
    if (!store.ok()) std::exit(1);
  }

  const RocksDbStore::Usage before = (*store)->usage();
  EvictionGoal goal;
  goal.to_bytes = before.bytes / 10 * 9;
  const absl::Time sweep_start = absl::Now();
  absl::StatusOr<EvictionReport> report = Evict(**store, goal);
  const double sweep_seconds = absl::ToDoubleSeconds(absl::Now() - sweep_start);
  if (!report.ok()) {
    std::fprintf(stderr, "%s\n", report.status().ToString().c_str());
    return 1;
  }

  std::printf("store: %lld entries, %s (filled in %.1f s)\n",
              static_cast<long long>(before.entries),
              FormatByteSize(before.bytes).c_str(), fill_seconds);
  std::printf("store hit path p50: %.1f us at 1k, %.1f us at %lld (%.2fx)\n",
              small.p50_us, large.p50_us, static_cast<long long>(entries),
              large.p50_us / small.p50_us);
  std::printf("store hit path p99: %.1f us at 1k, %.1f us at %lld (%.2fx)\n",
              small.p99_us, large.p99_us, static_cast<long long>(entries),
              large.p99_us / small.p99_us);
  std::printf("resident memory with the store open: %s\n",
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
        daemons.small.p50_us, daemons.large.p50_us,
        static_cast<long long>(entries),
        daemons.large.p50_us / daemons.small.p50_us, daemons.small.p99_us,
        daemons.large.p99_us, static_cast<long long>(entries),
        daemons.large.p99_us / daemons.small.p99_us,
        daemons.small_start_seconds, daemons.large_start_seconds,
        static_cast<long long>(entries),
        FormatByteSize(daemons.small_resident).c_str(),
        FormatByteSize(daemons.large_resident).c_str(),
        static_cast<long long>(entries));
  }
  store->reset();
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace aotcache

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return aotcache::Run();
}
