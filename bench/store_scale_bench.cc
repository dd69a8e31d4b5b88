// The store at scale: the hit path's latency (LookupHeader, HasArtifact,
// RecordHit: what a hit by digest reads and writes) at 1k entries and at
// --entries, the process's resident memory with the store open, and one
// eviction sweep to 90% of its size: how long it took and the longest any
// key's lock was held. Entries are filled straight into the store (each with
// an incompressible artifact of --artifact_bytes), not through a daemon.
//   build/bench/store_scale_bench --entries=1000000
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
#include "core/key/digest.h"
#include "core/paths/byte_size.h"
#include "core/store/evictor.h"
#include "core/store/rocksdb_store.h"

ABSL_FLAG(int64_t, entries, 1000000, "entries at the large scale");
ABSL_FLAG(int64_t, artifact_bytes, 1024, "each entry's artifact");
ABSL_FLAG(std::string, dir, "", "where to make the store (a temp dir)");

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
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[us.size() * 99 / 100]};
}

int64_t ResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
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

  const absl::Time fill_start = absl::Now();
  for (int64_t i = kSmall; i < entries; ++i) PutEntry(store, i, artifact_bytes);
  const double fill_seconds = absl::ToDoubleSeconds(absl::Now() - fill_start);
  const Latency large = HitLatency(store, entries, kSamples);
  const int64_t rss = ResidentBytes();

  const RocksDbStore::Usage before = store.usage();
  EvictionGoal goal;
  goal.to_bytes = before.bytes / 10 * 9;
  const absl::Time sweep_start = absl::Now();
  absl::StatusOr<EvictionReport> report = Evict(store, goal);
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
