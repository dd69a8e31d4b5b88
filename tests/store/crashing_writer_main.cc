// crashing_writer PATH N DURABILITY ARTIFACT_BYTES: opens the store at PATH,
// puts entries 0..N-1 (each with an artifact of its own), and exits without
// closing anything, as a process killed with SIGKILL would. A process of its
// own: the tests that use it have RocksDB threads that fork cannot copy.
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "core/key/digest.h"
#include "core/store/rocksdb_store.h"
#include "tests/store/store_entries.h"

int main(int argc, char** argv) {
  if (argc != 5) return 2;
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
