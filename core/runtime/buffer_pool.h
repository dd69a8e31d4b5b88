// BufferPool: the runtime's memory for tensor data. A large buffer freed is
// kept and handed out again for the next request of its size, instead of
// going back to malloc: glibc returns large freed blocks to the kernel (an
// mmap'ed block at once, the heap's top past its trim threshold), so a
// training step that allocates the same activations and gradients as the
// last one would fault in and zero every page anew (resnet18 on torch 2.13:
// about 6,600 page faults, 26 MB, a step more than eager's). What the pool
// holds idle is bounded (oldest given back is freed first); small buffers
// go to malloc, whose arenas keep them.
// Thread-safety: thread-safe; buffers may be freed on any thread.
#ifndef AOTCACHE_CORE_RUNTIME_BUFFER_POOL_H_
#define AOTCACHE_CORE_RUNTIME_BUFFER_POOL_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace aotcache {

class BufferPool {
 public:
  // Tensor memory is aligned to 64 bytes (a cache line and an AVX-512
  // vector) as torch's CPU allocator aligns it: BLAS packs and writes
  // misaligned matrices measurably slower.
  static constexpr size_t kAlignment = 64;
  // Buffers from this size up are kept when freed.
  static constexpr size_t kSmallestKept = size_t{64} << 10;

  // A pool that keeps at most `max_idle_bytes` of freed buffers.
  explicit BufferPool(size_t max_idle_bytes)
      : max_idle_bytes_(max_idle_bytes) {}
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // The pool the runtime's tensors use (1 GiB idle at most).
  static BufferPool& Default();

  // A buffer of at least `bytes` (rounded up to kAlignment, at least one
  // block), aligned to kAlignment, its contents unspecified; its size is
  // RoundedSize(bytes). Throws std::bad_alloc.
  char* Take(size_t bytes);
  // Returns a buffer Take gave with the same `bytes`.
  void GiveBack(char* buffer, size_t bytes);

  static size_t RoundedSize(size_t bytes);

  // Bytes held idle, for tests.
  size_t idle_bytes() const;

 private:
  struct Idle {
    char* buffer;
    size_t bytes;
  };
  void FreeOldestLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t max_idle_bytes_;
  mutable absl::Mutex mu_;
  std::list<Idle> oldest_first_ ABSL_GUARDED_BY(mu_);
  // Per size, its idle buffers, the most recently given back last.
  absl::flat_hash_map<size_t, std::vector<std::list<Idle>::iterator>> by_size_
      ABSL_GUARDED_BY(mu_);
  size_t idle_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

// Memory for tensor data from BufferPool::Default(), returned there when the
// owner goes.
class FreeMemory {
 public:
  FreeMemory() = default;
  explicit FreeMemory(size_t bytes) : bytes_(bytes) {}
  void operator()(char* p) const { BufferPool::Default().GiveBack(p, bytes_); }

 private:
  size_t bytes_ = 0;
};
using AlignedMemory = std::unique_ptr<char, FreeMemory>;
AlignedMemory AllocateAligned(size_t bytes);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_RUNTIME_BUFFER_POOL_H_
