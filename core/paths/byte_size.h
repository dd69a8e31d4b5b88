// Sizes and ages as operators write them on command lines: "20G", "512MiB",
// "1000000" (bytes; K, M, G and T are powers of 1024, with or without "iB"
// or "B"), and "7d", "36h", "90m", "30s".
// Thread-safety: functions only.
#ifndef AOTCACHE_CORE_PATHS_BYTE_SIZE_H_
#define AOTCACHE_CORE_PATHS_BYTE_SIZE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace aotcache {

// InvalidArgument naming `text` when it is no size.
absl::StatusOr<int64_t> ParseByteSize(absl::string_view text);
// "1.5 GiB", "800 KiB", "12 B".
std::string FormatByteSize(int64_t bytes);

// A whole number of days, hours, minutes or seconds; InvalidArgument else.
absl::StatusOr<absl::Duration> ParseAge(absl::string_view text);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_PATHS_BYTE_SIZE_H_
