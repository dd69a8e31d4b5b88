#include "core/store/blob_file_reader.h"

#include <cstdint>
#include <cstring>

#include "core/paths/read_file.h"

namespace aotcache {
namespace {

constexpr uint32_t kBlobMagic = 0x00248f37;
constexpr size_t kHeaderBytes = 30;
constexpr size_t kRecordHeaderBytes = 32;
constexpr size_t kCompressionAt = 13;  // Magic, version, cf id, flags.

uint64_t Fixed(const std::string& bytes, size_t at, size_t width) {
  uint64_t v = 0;
  for (size_t i = 0; i < width; ++i) {
    v |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[at + i])) << (8 * i);
  }
  return v;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ReadBlobRecords(
    const std::string& path) {
  std::vector<std::pair<std::string, std::string>> records;
  absl::StatusOr<std::string> file = ReadFile(path);
  if (!file.ok() || file->size() < kHeaderBytes ||
      Fixed(*file, 0, 4) != kBlobMagic || (*file)[kCompressionAt] != 0) {
    return records;
  }
  const std::string& bytes = *file;
  size_t at = kHeaderBytes;
  while (bytes.size() - at >= kRecordHeaderBytes) {
    const uint64_t key_size = Fixed(bytes, at, 8);
    const uint64_t value_size = Fixed(bytes, at + 8, 8);
    const size_t left = bytes.size() - at - kRecordHeaderBytes;
    if (key_size > left || value_size > left - key_size) break;
    const size_t key_at = at + kRecordHeaderBytes;
    records.emplace_back(bytes.substr(key_at, key_size),
                         bytes.substr(key_at + key_size, value_size));
    at = key_at + key_size + value_size;
  }
  return records;
}

}  // namespace aotcache
