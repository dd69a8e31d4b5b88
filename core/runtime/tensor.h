// Tensor: a strided view (Meta: shape, strides, storage offset, dtype) of a
// storage that it owns (shared with its views) or borrows from a caller.
// Views share the storage; nothing is copied unless asked.
// Thread-safety: a Tensor is a value; concurrent reads are safe, writes to
// the same storage need external synchronization.
#ifndef AOTCACHE_CORE_RUNTIME_TENSOR_H_
#define AOTCACHE_CORE_RUNTIME_TENSOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/graph/tensor_meta.h"
#include "core/runtime/buffer_pool.h"

namespace aotcache {

class Tensor {
 public:
  Tensor() = default;

  // A zero-filled tensor laid out as `meta` (any strides and offset), with a
  // fresh storage just large enough.
  static Tensor Zeros(const Meta& meta);
  static Tensor Contiguous(std::vector<int64_t> shape, DType dtype);
  // The same without the zeros, for a result written in full.
  static Tensor Uninitialized(const Meta& meta);
  // A tensor over caller memory of `storage_elements` elements, which must
  // outlive every Tensor made from it.
  static Tensor Borrow(void* storage, int64_t storage_elements, Meta meta);

  // Another view of the same storage.
  Tensor View(Meta meta) const;

  const Meta& meta() const { return meta_; }
  DType dtype() const { return meta_.dtype; }
  const std::vector<int64_t>& shape() const { return meta_.shape; }
  int64_t numel() const { return meta_.numel(); }
  bool defined() const { return storage_ != nullptr; }

  // The storage's first element; element i of the view is at
  // storage + offset + sum(index[d] * stride[d]).
  char* storage_data() const { return storage_->data; }
  int64_t storage_elements() const { return storage_->elements; }
  bool SharesStorageWith(const Tensor& other) const {
    return storage_ != nullptr && other.storage_ != nullptr &&
           storage_->data == other.storage_->data;
  }

  // The values as doubles, row-major (for tests and messages).
  std::vector<double> ToDoubles() const;

 private:
  struct Storage {
    AlignedMemory owned;  // Null when borrowed.
    char* data = nullptr;
    int64_t elements = 0;
  };

  static Tensor Allocate(const Meta& meta, bool zeroed);
  Tensor(std::shared_ptr<Storage> storage, Meta meta)
      : storage_(std::move(storage)), meta_(std::move(meta)) {}

  std::shared_ptr<Storage> storage_;
  Meta meta_;
};

// `t` itself when its elements lie row-major from its storage's first
// element, else a contiguous copy: for kernels that read a tensor as a flat
// array (never write through the result: it may be the caller's tensor).
Tensor ContiguousForReading(const Tensor& t);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_RUNTIME_TENSOR_H_
