// CanonicalWriter: appends typed values to a byte string in the fixed,
// platform-independent form the cache key hashes (cache_key.h documents it).
// Thread-safety: not thread-safe; one writer per encoding.
#ifndef AOTCACHE_CORE_KEY_CANONICAL_WRITER_H_
#define AOTCACHE_CORE_KEY_CANONICAL_WRITER_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace aotcache {

class CanonicalWriter {
 public:
  void Tag(char tag) { out_.push_back(tag); }
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void Bool(bool v) { U8(v ? 1 : 0); }
  void U32(uint32_t v) { Fixed(v, 4); }
  void U64(uint64_t v) { Fixed(v, 8); }
  void I64(int64_t v) { Fixed(static_cast<uint64_t>(v), 8); }
  void Double(double v);
  void Str(absl::string_view s) {
    U64(s.size());
    out_.append(s.data(), s.size());
  }

  const std::string& bytes() const { return out_; }

 private:
  void Fixed(uint64_t v, int width) {
    for (int i = 0; i < width; ++i)
      out_.push_back(static_cast<char>(v >> (8 * i)));
  }

  std::string out_;
};

}  // namespace aotcache

#endif  // AOTCACHE_CORE_KEY_CANONICAL_WRITER_H_
