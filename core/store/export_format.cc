#include "core/store/export_format.h"

#include <cstring>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/key/digest.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

constexpr uint8_t kArtifact = 1;
constexpr uint8_t kEntry = 2;
constexpr uint8_t kEnd = 3;
constexpr size_t kMagicSize = sizeof(kExportMagic) - 1;
constexpr size_t kHeaderSize = kMagicSize + 4;
constexpr size_t kRecordHead = 1 + 8;
constexpr size_t kRecordTail = 32;
// No record is this large (an artifact is at most 256 MiB): a length past
// it is damage, not a reason to wait for more bytes.
constexpr uint64_t kMaxPayload = uint64_t{1} << 30;

template <typename T>
void Append(std::string* out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out->append(bytes, sizeof(T));
}

template <typename T>
T Load(const char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

// The raw SHA-256 of `pieces` one after another.
std::string Checksum(absl::Span<const absl::string_view> pieces) {
  return absl::HexStringToBytes(Sha256HexOfPieces(pieces));
}

}  // namespace

ExportWriter::ExportWriter(std::function<absl::Status(absl::string_view)> sink)
    : sink_(std::move(sink)) {}

absl::Status ExportWriter::Record(uint8_t kind, absl::string_view payload) {
  std::string head;
  if (!started_) {
    head.append(kExportMagic, kMagicSize);
    Append<uint32_t>(&head, kExportVersion);
    started_ = true;
  }
  const size_t record_start = head.size();
  Append<uint8_t>(&head, kind);
  Append<uint64_t>(&head, payload.size());
  const std::string checksum =
      Checksum({absl::string_view(head).substr(record_start), payload});
  AOTCACHE_RETURN_IF_ERROR(sink_(head));
  AOTCACHE_RETURN_IF_ERROR(sink_(payload));
  return sink_(checksum);
}

absl::Status ExportWriter::AddArtifact(absl::string_view digest,
                                       absl::string_view bytes) {
  ++artifacts_;
  return Record(kArtifact, absl::StrCat(digest, bytes));
}

absl::Status ExportWriter::AddEntry(const v1::CacheEntry& entry) {
  ++entries_;
  return Record(kEntry, entry.SerializeAsString());
}

absl::Status ExportWriter::Finish() {
  std::string counts;
  Append<uint64_t>(&counts, entries_);
  Append<uint64_t>(&counts, artifacts_);
  return Record(kEnd, counts);
}

absl::Status ExportReader::Bad(absl::string_view what) const {
  return absl::DataLossError(absl::StrCat("export stream: record ", record_ + 1,
                                          " (at byte ", offset_, "): ", what));
}

absl::Status ExportReader::Feed(absl::string_view data) {
  if (!failed_.ok()) return failed_;
  buffer_.append(data.data(), data.size());
  failed_ = Parse();
  return failed_;
}

absl::Status ExportReader::Parse() {
  size_t at = 0;
  // Consumed bytes leave the buffer and move the offset on.
  auto consume = [&](size_t n) {
    at += n;
    offset_ += static_cast<int64_t>(n);
  };
  absl::Status status;
  while (status.ok()) {
    const absl::string_view rest = absl::string_view(buffer_).substr(at);
    if (!header_read_) {
      if (rest.size() < kHeaderSize) break;
      if (rest.substr(0, kMagicSize) != kExportMagic) {
        status = absl::DataLossError(
            "not an aotcache export (it does not begin with its magic)");
        break;
      }
      const uint32_t version = Load<uint32_t>(rest.data() + kMagicSize);
      if (version != kExportVersion) {
        status = absl::FailedPreconditionError(
            absl::StrCat("an export of format version ", version,
                         "; this aotcache reads version ", kExportVersion));
        break;
      }
      header_read_ = true;
      consume(kHeaderSize);
      continue;
    }
    if (rest.empty()) break;
    if (ended_) {
      status = Bad("bytes after the end record");
      break;
    }
    if (rest.size() < kRecordHead) break;
    const uint8_t kind = Load<uint8_t>(rest.data());
    const uint64_t length = Load<uint64_t>(rest.data() + 1);
    if (length > kMaxPayload ||
        (kind != kArtifact && kind != kEntry && kind != kEnd)) {
      status =
          Bad(absl::StrCat("damaged (kind ", kind, ", length ", length, ")"));
      break;
    }
    const size_t size = kRecordHead + length + kRecordTail;
    if (rest.size() < size) break;
    const absl::string_view checked = rest.substr(0, kRecordHead + length);
    const absl::string_view payload = checked.substr(kRecordHead);
    if (Checksum({checked}) != rest.substr(kRecordHead + length, kRecordTail)) {
      std::string which;
      if (kind == kArtifact && IsSha256Hex(payload.substr(0, 64))) {
        which = absl::StrCat(" (artifact ", payload.substr(0, 64), ")");
      }
      status = Bad(absl::StrCat("fails its checksum", which));
      break;
    }
    if (kind == kArtifact) {
      const std::string digest(payload.substr(0, 64));
      std::string bytes(payload.size() >= 64 ? payload.substr(64) : "");
      if (!IsSha256Hex(digest) || Sha256Hex(bytes) != digest) {
        status = Bad(
            absl::StrCat("artifact ", digest, " does not match its digest"));
        break;
      }
      ++artifacts_;
      status = handlers_.artifact(digest, std::move(bytes));
    } else if (kind == kEntry) {
      v1::CacheEntry entry;
      if (!entry.ParseFromArray(payload.data(),
                                static_cast<int>(payload.size())) ||
          entry.key().size() != 32) {
        status = Bad("an entry that does not parse");
        break;
      }
      ++entries_;
      const std::string key = absl::BytesToHexString(entry.key());
      status = handlers_.entry(std::move(entry));
      if (!status.ok()) {
        status = Bad(absl::StrCat("entry ", key, ": ", status.message()));
      }
    } else {
      if (length != 16 ||
          Load<uint64_t>(payload.data()) != static_cast<uint64_t>(entries_) ||
          Load<uint64_t>(payload.data() + 8) !=
              static_cast<uint64_t>(artifacts_)) {
        status = Bad("the end record's counts do not match the records read");
        break;
      }
      ended_ = true;
    }
    ++record_;
    consume(size);
  }
  buffer_.erase(0, at);
  return status;
}

absl::Status ExportReader::Finish() {
  if (!failed_.ok()) return failed_;
  if (!header_read_) {
    return absl::DataLossError("export stream: shorter than its header");
  }
  if (!ended_) {
    return Bad(buffer_.empty() ? "the stream ends without its end record"
                               : "the stream ends inside this record");
  }
  return absl::OkStatus();
}

}  // namespace aotcache
