// crashing_writer PATH N DURABILITY ARTIFACT_BYTES: opens the store at PATH,
// puts entries 0..N-1 (each with an artifact of its own), and exits without
// closing anything, as a process killed with SIGKILL would.
// crashing_writer PATH evict TO_BYTES KILL_BELOW_BYTES: opens the store at
// PATH, evicts down to TO_BYTES on a thread, and kills itself with SIGKILL
// once the store holds fewer than KILL_BELOW_BYTES: in the middle of the
// eviction.
// A process of its own: the tests that use it have RocksDB threads that fork
// cannot copy.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "core/key/digest.h"
#include "core/store/evictor.h"
#include "core/store/rocksdb_store.h"
#include "tests/store/store_entries.h"

namespace {

int EvictAndDie(const std::string& path, int64_t to_bytes, int64_t kill_below) {
  aotcache::StoreOptions options;
  options.path = path;
  auto store = aotcache::RocksDbStore::Open(options);
  if (!store.ok()) return 3;
  aotcache::RocksDbStore& s = **store;
  std::thread evicting([&s, to_bytes] {
    aotcache::EvictionGoal goal;
    goal.to_bytes = to_bytes;
    (void)aotcache::Evict(s, goal);
  });
  while (s.usage().bytes >= kill_below) std::this_thread::yield();
  kill(getpid(), SIGKILL);
  evicting.join();  // Not reached.
  return 5;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) return 2;
  if (std::string(argv[2]) == "evict") {
    return EvictAndDie(argv[1], std::atoll(argv[3]), std::atoll(argv[4]));
  }
  aotcache::StoreOptions options;
  options.path = argv[1];
  const std::string durability = argv[3];
  options.durability = durability == "none" ? aotcache::Durability::kNoWal
                                            : aotcache::Durability::kWalNoSync;
  auto store = aotcache::RocksDbStore::Open(options);
  if (!store.ok()) return 3;
  const int n = std::atoi(argv[2]);
  const size_t bytes = std::strtoul(argv[4], nullptr, 10);
  for (int i = 0; i < n; ++i) {
    auto [entry, artifact] = aotcache::testing::NumberedEntry(i, bytes);
    if (!(*store)->Put(entry, {artifact}).ok()) return 4;
  }
  _exit(0);
}
