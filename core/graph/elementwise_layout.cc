#include "core/graph/elementwise_layout.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace aotcache {
namespace {

// torch's is_contiguous: the strides of dims of size 1 do not matter.
bool TorchContiguous(const Meta& m) {
  int64_t expected = 1;
  for (int64_t d = m.dim() - 1; d >= 0; --d) {
    if (m.shape[d] == 1) continue;
    if (m.shape[d] == 0) return true;
    if (m.stride[d] != expected) return false;
    expected *= m.shape[d];
  }
  return true;
}

// is_contiguous(memory_format=torch.channels_last), for 4-d tensors.
bool TorchChannelsLast(const Meta& m) {
  if (m.dim() != 4) return false;
  int64_t expected = 1;
  for (int64_t d : {1, 3, 2, 0}) {
    if (m.shape[d] == 0) return true;
    if (m.shape[d] == 1) continue;
    if (m.stride[d] != expected) return false;
    expected *= m.shape[d];
  }
  return true;
}

}  // namespace

bool NonOverlappingAndDense(const Meta& m) {
  std::vector<int64_t> dims(m.dim());
  std::iota(dims.begin(), dims.end(), 0);
  std::sort(dims.begin(), dims.end(), [&](int64_t a, int64_t b) {
    if (m.shape[a] < 2) return false;
    if (m.shape[b] < 2) return true;
    return m.stride[a] < m.stride[b];
  });
  int64_t expected = 1;
  for (int64_t d : dims) {
    if (m.shape[d] < 2) return true;
    if (m.stride[d] != expected) return false;
    expected *= m.shape[d];
  }
  return true;
}

namespace {

std::vector<int64_t> ChannelsLastStrides(const std::vector<int64_t>& s) {
  std::vector<int64_t> stride(4);
  stride[1] = 1;
  stride[3] = s[1];
  stride[2] = stride[3] * s[3];
  stride[0] = stride[2] * s[2];
  return stride;
}

// reorder_dimensions (and infer_dense_strides, for one tensor): the dims,
// fastest-moving first, as the first operand whose strides differ orders
// them (a broadcast dim tells nothing; equal strides put the smaller dim
// first), else in reverse (contiguous) order.
std::vector<int64_t> FastestFirst(
    const std::vector<std::vector<int64_t>>& strides,
    const std::vector<int64_t>& shape) {
  const int64_t ndim = static_cast<int64_t>(shape.size());
  // 1 if dim0 should come after dim1, -1 if before, 0 if no operand tells.
  auto should_swap = [&](int64_t dim0, int64_t dim1) {
    for (const std::vector<int64_t>& s : strides) {
      if (s[dim0] == 0 || s[dim1] == 0) continue;
      if (s[dim0] < s[dim1]) return -1;
      if (s[dim0] > s[dim1]) return 1;
      if (shape[dim0] > shape[dim1]) return 1;
    }
    return 0;
  };
  std::vector<int64_t> perm(ndim);
  for (int64_t k = 0; k < ndim; ++k) perm[k] = ndim - 1 - k;
  for (int64_t i = 1; i < ndim; ++i) {  // An insertion sort, as torch's.
    int64_t dim1 = i;
    for (int64_t dim0 = i - 1; dim0 >= 0; --dim0) {
      int comparison = should_swap(perm[dim0], perm[dim1]);
      if (comparison > 0) {
        std::swap(perm[dim0], perm[dim1]);
        dim1 = dim0;
      } else if (comparison < 0) {
        break;
      }
    }
  }
  return perm;
}

}  // namespace

Meta ElementwiseResult(const std::vector<const Meta*>& operands,
                       std::vector<int64_t> shape, DType dtype) {
  Meta out = ContiguousMeta(shape, dtype);
  const int64_t ndim = static_cast<int64_t>(shape.size());
  if (operands.empty() || ndim <= 1) return out;

  // fast_set_up: every operand of the result's shape.
  bool same_shape = true;
  for (const Meta* m : operands) same_shape &= m->shape == shape;
  if (same_shape) {
    bool contiguous = true, channels_last = true, dense = true;
    for (const Meta* m : operands) {
      contiguous &= TorchContiguous(*m);
      channels_last &= TorchChannelsLast(*m);
      dense &= NonOverlappingAndDense(*m);
    }
    if (contiguous) return out;
    if (channels_last) return ChannelsLastMeta(std::move(shape), dtype);
    if (dense &&
        std::all_of(operands.begin(), operands.end(), [&](const Meta* m) {
          return m->stride == operands[0]->stride;
        })) {
      out.stride = operands[0]->stride;
      return out;
    }
  }

  // compute_strides: each operand's strides over the result's dims, 0 where
  // it broadcasts.
  std::vector<std::vector<int64_t>> strides;
  for (const Meta* m : operands) {
    std::vector<int64_t> s(ndim, 0);
    const int64_t offset = ndim - m->dim();
    for (int64_t d = 0; d < m->dim(); ++d) {
      s[offset + d] =
          m->shape[d] == 1 && shape[offset + d] != 1 ? 0 : m->stride[d];
    }
    strides.push_back(std::move(s));
  }
  std::vector<int64_t> perm = FastestFirst(strides, shape);
  bool inverted = true;
  for (int64_t k = 0; k < ndim; ++k) inverted &= perm[k] == ndim - 1 - k;
  if (inverted) return out;
  // allocate_or_resize_outputs: dense in that order.
  int64_t next = 1;
  for (int64_t k = 0; k < ndim; ++k) {
    out.stride[perm[k]] = next;
    next *= shape[perm[k]];
  }
  return out;
}

Meta PreservedLayout(const Meta& in, DType dtype) {
  Meta out = ContiguousMeta(in.shape, dtype);
  if (NonOverlappingAndDense(in)) {
    out.stride = in.stride;
    return out;
  }
  // infer_dense_strides: dense in the order of in's strides.
  std::vector<int64_t> perm = FastestFirst({in.stride}, in.shape);
  int64_t next = 1;
  for (int64_t d : perm) {
    out.stride[d] = next;
    next *= std::max<int64_t>(in.shape[d], 1);
  }
  return out;
}

Meta ChannelsLastMeta(std::vector<int64_t> shape, DType dtype) {
  Meta out = ContiguousMeta(std::move(shape), dtype);
  if (out.dim() == 4) out.stride = ChannelsLastStrides(out.shape);
  return out;
}

}  // namespace aotcache
