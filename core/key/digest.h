// SHA-256 digests as lowercase hex, for content addressing and hashes of
// canonical encodings.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_KEY_DIGEST_H_
#define AOTCACHE_CORE_KEY_DIGEST_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace aotcache {

std::string Sha256Hex(absl::string_view bytes);

// Sha256Hex of the concatenation of `pieces` (a message's slices), without
// concatenating them.
std::string Sha256HexOfPieces(absl::Span<const absl::string_view> pieces);

// Whether `text` is what Sha256Hex returns: 64 lowercase hex digits.
bool IsSha256Hex(absl::string_view text);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_KEY_DIGEST_H_
