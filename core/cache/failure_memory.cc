#include "core/cache/failure_memory.h"

#include "absl/strings/str_cat.h"

namespace aotcache {

std::optional<absl::Status> FailureMemory::Recall(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = failures_.find(key);
  if (it == failures_.end()) return std::nullopt;
  const absl::Duration ago = clock_() - it->second.when;
  if (ago >= how_long_) {
    failures_.erase(it);
    return std::nullopt;
  }
  return absl::Status(
      it->second.status.code(),
      absl::StrCat(it->second.status.message(), " (remembered from ",
                   absl::FormatDuration(absl::Trunc(ago, absl::Seconds(1))),
                   " ago; not compiled again)"));
}

void FailureMemory::Remember(const std::string& key,
                             const absl::Status& status) {
  if (!Repeats(status) || how_long_ <= absl::ZeroDuration()) return;
  absl::MutexLock lock(&mu_);
  if (failures_.size() >= kMaxKeys) failures_.clear();
  failures_[key] = Failure{status, clock_()};
}

bool FailureMemory::Repeats(const absl::Status& status) {
  return absl::IsInvalidArgument(status) || absl::IsInternal(status) ||
         absl::IsResourceExhausted(status) ||
         absl::IsDeadlineExceeded(status) || absl::IsFailedPrecondition(status);
}

}  // namespace aotcache
