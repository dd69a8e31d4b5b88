// Entries for store tests: entry i with an artifact of its own.
// Thread-safety: functions only.
#ifndef AOTCACHE_TESTS_STORE_STORE_ENTRIES_H_
#define AOTCACHE_TESTS_STORE_STORE_ENTRIES_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "aotcache/v1/store.pb.h"
#include "core/key/digest.h"

namespace aotcache::testing {

inline std::string NumberedKey(int i) {
  std::string key(32, '\0');
  key[0] = static_cast<char>(i >> 8);
  key[1] = static_cast<char>(i & 255);
  return key;
}

// Entry i and its artifact (digest, bytes) of `artifact_bytes` bytes.
inline std::pair<v1::CacheEntry, std::pair<std::string, std::string>>
NumberedEntry(int i, size_t artifact_bytes) {
  // Padded with pseudo-random bytes: zstd leaves them as they are, so the
  // store holds `artifact_bytes` (in a blob file from 4 KiB).
  std::string bytes = absl::StrCat("artifact ", i, " ");
  uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(i + 1);
  while (bytes.size() < artifact_bytes) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    bytes.push_back(static_cast<char>(x));
  }
  bytes.resize(artifact_bytes);
  v1::CacheEntry e;
  e.set_key(NumberedKey(i));
  e.set_mode(v1::MODE_INFERENCE);
  e.set_forward_digest(Sha256Hex(bytes));
  return {e, {e.forward_digest(), bytes}};
}

}  // namespace aotcache::testing

#endif  // AOTCACHE_TESTS_STORE_STORE_ENTRIES_H_
