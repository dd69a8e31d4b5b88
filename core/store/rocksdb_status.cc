#include "core/store/rocksdb_status.h"

#include "absl/strings/str_cat.h"

namespace aotcache {

absl::Status FromRocksDb(const rocksdb::Status& s, absl::string_view context) {
  if (s.ok()) return absl::OkStatus();
  std::string message = absl::StrCat(context, ": ", s.ToString());
  if (s.IsNotFound()) return absl::NotFoundError(message);
  if (s.IsCorruption()) return absl::DataLossError(message);
  if (s.IsNoSpace() || s.IsMemoryLimit())
    return absl::ResourceExhaustedError(message);
  if (s.IsBusy() || s.IsTimedOut() || s.IsTryAgain() || s.IsIOError() ||
      s.IsIncomplete()) {
    return absl::UnavailableError(message);
  }
  if (s.IsInvalidArgument() || s.IsNotSupported()) {
    return absl::FailedPreconditionError(message);
  }
  return absl::InternalError(message);
}

}  // namespace aotcache
