#include "core/cache/bypass_memo.h"

#include <utility>

namespace aotcache {

std::shared_ptr<const BypassMemo::Entry> BypassMemo::Find(
    const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : it->second;
}

void BypassMemo::PutForward(const CompileResult& forward) {
  Entry entry;
  entry.forward = forward;
  entry.forward.shared_compile = false;
  Put(forward.key, std::move(entry));
}

void BypassMemo::PutBackward(const std::string& key,
                             const BackwardResult& backward) {
  std::shared_ptr<const Entry> old = Find(key);
  if (old == nullptr) return;  // Trimmed meanwhile: not kept.
  Entry entry = *old;
  entry.backward = backward;
  Put(key, std::move(entry));
}

int64_t BypassMemo::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

void BypassMemo::Put(const std::string& key, Entry entry) {
  entry.bytes = static_cast<int64_t>(entry.forward.forward_bytes.size() +
                                     entry.forward.metadata_bytes.size());
  if (entry.backward.has_value()) {
    entry.bytes +=
        static_cast<int64_t>(entry.backward->artifact.ByteSizeLong());
  }
  absl::MutexLock lock(&mu_);
  auto& slot = entries_[key];
  if (slot == nullptr) {
    oldest_first_.push_back(key);
  } else {
    bytes_ -= slot->bytes;
  }
  bytes_ += entry.bytes;
  slot = std::make_shared<const Entry>(std::move(entry));
  Trim();
}

void BypassMemo::Trim() {
  while (bytes_ > max_bytes_ && !oldest_first_.empty()) {
    auto it = entries_.find(oldest_first_.front());
    oldest_first_.pop_front();
    if (it == entries_.end()) continue;
    bytes_ -= it->second->bytes;
    entries_.erase(it);
  }
}

}  // namespace aotcache
