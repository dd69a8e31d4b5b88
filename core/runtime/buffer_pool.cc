#include "core/runtime/buffer_pool.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <new>

namespace aotcache {

BufferPool::~BufferPool() {
  absl::MutexLock lock(&mu_);
  while (!oldest_first_.empty()) FreeOldestLocked();
}

BufferPool& BufferPool::Default() {
  // Never destroyed: tensors may be freed during the process's exit.
  static BufferPool* pool = new BufferPool(size_t{1} << 30);
  return *pool;
}

size_t BufferPool::RoundedSize(size_t bytes) {
  // aligned_alloc wants a multiple of the alignment.
  return std::max<size_t>((bytes + kAlignment - 1) / kAlignment, 1) *
         kAlignment;
}

char* BufferPool::Take(size_t bytes) {
  bytes = RoundedSize(bytes);
  if (bytes >= kSmallestKept) {
    absl::MutexLock lock(&mu_);
    auto it = by_size_.find(bytes);
    if (it != by_size_.end()) {
      std::list<Idle>::iterator idle = it->second.back();
      it->second.pop_back();
      if (it->second.empty()) by_size_.erase(it);
      char* buffer = idle->buffer;
      oldest_first_.erase(idle);
      idle_bytes_ -= bytes;
      return buffer;
    }
  }
  void* memory = std::aligned_alloc(kAlignment, bytes);
  if (memory == nullptr) throw std::bad_alloc();
  return static_cast<char*>(memory);
}

void BufferPool::GiveBack(char* buffer, size_t bytes) {
  bytes = RoundedSize(bytes);
  if (bytes < kSmallestKept || bytes > max_idle_bytes_) {
    std::free(buffer);
    return;
  }
  absl::MutexLock lock(&mu_);
  while (idle_bytes_ + bytes > max_idle_bytes_) FreeOldestLocked();
  oldest_first_.push_back({buffer, bytes});
  by_size_[bytes].push_back(std::prev(oldest_first_.end()));
  idle_bytes_ += bytes;
}

void BufferPool::FreeOldestLocked() {
  const Idle oldest = oldest_first_.front();
  // The oldest of its size is the first of its list.
  auto it = by_size_.find(oldest.bytes);
  it->second.erase(it->second.begin());
  if (it->second.empty()) by_size_.erase(it);
  oldest_first_.pop_front();
  idle_bytes_ -= oldest.bytes;
  std::free(oldest.buffer);
}

size_t BufferPool::idle_bytes() const {
  absl::MutexLock lock(&mu_);
  return idle_bytes_;
}

AlignedMemory AllocateAligned(size_t bytes) {
  return AlignedMemory(BufferPool::Default().Take(bytes), FreeMemory(bytes));
}

}  // namespace aotcache
