// The layout of an elementwise op's result, as torch's TensorIterator lays
// out an output it allocates (TensorIteratorBase::fast_set_up,
// reorder_dimensions and allocate_or_resize_outputs in torch 1.13): eager's
// `x.t() * 2` is transposed like x.t(), `relu(x)` of a channels-last x is
// channels-last. A compiled result must have eager's strides.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_GRAPH_ELEMENTWISE_LAYOUT_H_
#define AOTCACHE_CORE_GRAPH_ELEMENTWISE_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "core/graph/tensor_meta.h"

namespace aotcache {

// The result of an op over `operands` (in the order TensorIterator takes
// them: the op's tensor arguments, plain numbers as 0-dim tensors) that
// broadcast to `shape`: contiguous when every operand is, channels-last when
// every operand is, the operands' strides when all have `shape` and one set
// of non-overlapping, dense strides, and otherwise dense with its dimensions
// ordered as the operands' strides order them.
Meta ElementwiseResult(const std::vector<const Meta*>& operands,
                       std::vector<int64_t> shape, DType dtype);

// torch's is_non_overlapping_and_dense: the elements fill a block of memory
// once each, in some order of the dims.
bool NonOverlappingAndDense(const Meta& m);

// A fresh tensor laid out like `in` (torch's preserve_format: clone,
// _to_copy, empty_like): in's strides if they are non-overlapping and dense,
// else dense in the order of in's strides.
Meta PreservedLayout(const Meta& in, DType dtype);

// Channels-last strides for a 4-d shape (contiguous otherwise).
Meta ChannelsLastMeta(std::vector<int64_t> shape, DType dtype);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_GRAPH_ELEMENTWISE_LAYOUT_H_
