#include "core/paths/byte_size.h"

#include <cstdio>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace aotcache {
namespace {

// The digits at the front of `text`, moved past.
absl::string_view TakeDigits(absl::string_view& text) {
  size_t n = 0;
  while (n < text.size() && absl::ascii_isdigit(text[n])) ++n;
  absl::string_view digits = text.substr(0, n);
  text.remove_prefix(n);
  return digits;
}

}  // namespace

absl::StatusOr<int64_t> ParseByteSize(absl::string_view text) {
  absl::string_view rest = absl::StripAsciiWhitespace(text);
  int64_t number = 0;
  if (!absl::SimpleAtoi(TakeDigits(rest), &number)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", text, "' is not a size (say 20G, 512MiB or a number of bytes)"));
  }
  rest = absl::StripAsciiWhitespace(rest);
  int shift = 0;
  if (!rest.empty()) {
    switch (absl::ascii_toupper(rest[0])) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      case 'T':
        shift = 40;
        break;
      case 'B':
        shift = 0;
        break;
      default:
        shift = -1;
    }
    if (shift > 0) rest.remove_prefix(1);
    if (shift > 0 && !rest.empty() && (rest[0] == 'i' || rest[0] == 'I')) {
      rest.remove_prefix(1);
    }
    if (!rest.empty() && (rest[0] == 'B' || rest[0] == 'b')) {
      rest.remove_prefix(1);
    }
  }
  if (shift < 0 || !rest.empty() ||
      number > (std::numeric_limits<int64_t>::max() >> shift)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", text, "' is not a size (say 20G, 512MiB or a number of bytes)"));
  }
  return number << shift;
}

std::string FormatByteSize(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (unit < 4 && (value >= 1024 || value <= -1024)) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return absl::StrCat(bytes, " B");
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

absl::StatusOr<absl::Duration> ParseAge(absl::string_view text) {
  absl::string_view rest = absl::StripAsciiWhitespace(text);
  int64_t number = 0;
  const bool counted = absl::SimpleAtoi(TakeDigits(rest), &number);
  absl::Duration unit;
  if (rest == "d") {
    unit = absl::Hours(24);
  } else if (rest == "h") {
    unit = absl::Hours(1);
  } else if (rest == "m") {
    unit = absl::Minutes(1);
  } else if (rest == "s") {
    unit = absl::Seconds(1);
  }
  if (!counted || unit == absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not an age (say 7d, 36h, 90m or 30s)"));
  }
  return number * unit;
}

}  // namespace aotcache
