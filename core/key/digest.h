// SHA-256 digests as lowercase hex, for content addressing and hashes of
// canonical encodings.
// Thread-safety: pure function.
#ifndef AOTCACHE_CORE_KEY_DIGEST_H_
#define AOTCACHE_CORE_KEY_DIGEST_H_

#include <string>

#include "absl/strings/string_view.h"

namespace aotcache {

std::string Sha256Hex(absl::string_view bytes);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_KEY_DIGEST_H_
