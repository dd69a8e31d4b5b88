// The export format: a stream of a store's entries with their artifacts, as
// `aotcache export` writes it and `aotcache import` reads it
// (docs/export-format.md):
//
//   "aotcache-export\n"  (16 bytes), u32 LE version (1)
//   records, each:  u8 kind, u64 LE length, payload, SHA-256 (32 bytes) of
//                   the kind, length and payload
//     kind 1, artifact: its digest (64 lowercase hex) then its bytes
//     kind 2, entry:    an encoded v1::CacheEntry; every artifact it
//                       references comes before it in the stream
//     kind 3, end:      u64 LE entries, u64 LE artifacts (a stream cut short
//                       has no end)
//
// Reading checks every record's SHA-256 and every artifact's digest; the
// first record that fails stops the stream, named by its number and byte
// offset (and its entry's key or artifact's digest when known).
// Thread-safety: a writer or a reader is used from one thread.
#ifndef AOTCACHE_CORE_STORE_EXPORT_FORMAT_H_
#define AOTCACHE_CORE_STORE_EXPORT_FORMAT_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "aotcache/v1/store.pb.h"

namespace aotcache {

inline constexpr char kExportMagic[] = "aotcache-export\n";
inline constexpr uint32_t kExportVersion = 1;

class ExportWriter {
 public:
  // `sink` takes the stream's bytes in order; its error stops the writer.
  explicit ExportWriter(std::function<absl::Status(absl::string_view)> sink);

  absl::Status AddArtifact(absl::string_view digest, absl::string_view bytes);
  absl::Status AddEntry(const v1::CacheEntry& entry);
  absl::Status Finish();  // The end record.

  int64_t entries() const { return entries_; }
  int64_t artifacts() const { return artifacts_; }

 private:
  absl::Status Record(uint8_t kind, absl::string_view payload);

  std::function<absl::Status(absl::string_view)> sink_;
  bool started_ = false;
  int64_t entries_ = 0;
  int64_t artifacts_ = 0;
};

class ExportReader {
 public:
  struct Handlers {
    // Called for each record once it is checked; an error stops the reader.
    std::function<absl::Status(const std::string& digest, std::string bytes)>
        artifact;
    std::function<absl::Status(v1::CacheEntry entry)> entry;
  };
  explicit ExportReader(Handlers handlers) : handlers_(std::move(handlers)) {}

  // The stream's next bytes, in any pieces. DataLoss naming the record that
  // fails its checks.
  absl::Status Feed(absl::string_view data);
  // DataLoss unless the stream ended with its end record, whose counts
  // agree with what was read.
  absl::Status Finish();

  int64_t entries() const { return entries_; }
  int64_t artifacts() const { return artifacts_; }
  int64_t bytes_read() const { return offset_; }

 private:
  absl::Status Parse();
  absl::Status Bad(absl::string_view what) const;

  Handlers handlers_;
  std::string buffer_;  // Bytes not yet parsed.
  int64_t offset_ = 0;  // Of buffer_'s first byte in the stream.
  int64_t record_ = 0;  // Records read.
  bool header_read_ = false;
  bool ended_ = false;
  int64_t entries_ = 0;
  int64_t artifacts_ = 0;
  absl::Status failed_;
};

}  // namespace aotcache

#endif  // AOTCACHE_CORE_STORE_EXPORT_FORMAT_H_
