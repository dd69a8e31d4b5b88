// The decomposition of _embedding_bag and _embedding_bag_forward_only
// (nn.EmbeddingBag, F.embedding_bag; decompositions.h) in modes sum and mean:
// each index's bag from the offsets (a count of the offsets at or before it,
// torch's offset2bag), the rows gathered (index_select), zeroed at
// padding_idx, scaled by per_sample_weights, and added into their bags
// (index_add); mean divides by the bag's count of non-padding rows (an empty
// bag stays 0). The gradients are those of the ops they become: each row's
// bag gradient back to its weight row, as torch's dense backward. Mode max,
// scale_grad_by_freq and sparse gradients are refused by name.
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/decompositions.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

using decompositions_internal::ArgError;
using Results = absl::StatusOr<std::vector<int>>;

constexpr int64_t kSum = 0, kMean = 1;

// _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
// per_sample_weights?, include_last_offset, padding_idx): output, offset2bag,
// bag_size, max_indices (torch's values for sum and mean: bag_size is 0 for
// sum and max_indices is bag_size).
Results EmbeddingBag(Decomposer& d) {
  const Meta weight = d.tensor(0), indices = d.tensor(1), offsets = d.tensor(2);
  const int64_t mode = d.arg(4).i;
  if (mode != kSum && mode != kMean) {
    return ArgError("mode", "only sum and mean are supported (max is not)");
  }
  if (d.arg(3).b) return ArgError("scale_grad_by_freq", "is not supported");
  if (d.arg(5).b)
    return ArgError("sparse", "sparse gradients are not supported");
  if (weight.dim() != 2 || !IsFloating(weight.dtype)) {
    return ArgError("weight", "must be a 2-d floating tensor");
  }
  if (indices.dim() != 1 || offsets.dim() != 1) {
    return ArgError("indices", "indices and offsets must be 1-d");
  }
  const bool weighted = !d.arg(6).is_none();
  if (weighted && mode != kSum) {
    return ArgError("per_sample_weights", "only mode sum takes them");
  }
  if (weighted && d.tensor(6).shape != indices.shape) {
    return ArgError("per_sample_weights", "must be shaped like indices");
  }
  const int64_t n = indices.shape[0], dim = weight.shape[1];
  const int64_t bags = offsets.shape[0] - (d.arg(7).b ? 1 : 0);
  if (bags < 1) return ArgError("offsets", "must give at least one bag");
  const int64_t padding = d.arg(8).i;
  auto full = [&](std::vector<int64_t> shape, int64_t value, DType dtype) {
    return d.EmitOne("aten.full.default",
                     {IntsArg(std::move(shape)), IntArg(value), DTypeArg(dtype),
                      NoneArg(), NoneArg(), NoneArg()});
  };
  // offset2bag: the offsets at or before each index, minus 1. With
  // include_last_offset, indices from the last offset on are in no bag:
  // torch adds none of them but counts them into the last bag's size, so
  // here they go to the last bag with a zero row.
  AOTCACHE_ASSIGN_OR_RETURN(int marks, full({n + 1}, 0, v1::DTYPE_INT64));
  AOTCACHE_ASSIGN_OR_RETURN(int ones,
                            full({offsets.shape[0]}, 1, v1::DTYPE_INT64));
  AOTCACHE_ASSIGN_OR_RETURN(int marked,
                            d.EmitOne("aten.index_add.default",
                                      {TensorArg(marks), IntArg(0), d.arg(2),
                                       TensorArg(ones), IntArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int counted, d.EmitOne("aten.cumsum.default",
                             {TensorArg(marked), IntArg(0), NoneArg()}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int head,
      d.EmitOne("aten.slice.Tensor", {TensorArg(counted), IntArg(0), IntArg(0),
                                      IntArg(n), IntArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int bag_of,
      d.EmitOne("aten.sub.Scalar", {TensorArg(head), IntArg(1), IntArg(1)}));
  // The rows, zero at padding_idx and past the last offset, scaled by the
  // per-sample weights.
  AOTCACHE_ASSIGN_OR_RETURN(
      int rows,
      d.EmitOne("aten.index_select.default", {d.arg(0), IntArg(0), d.arg(1)}));
  auto zero_rows_unless = [&](int keep) -> absl::Status {
    AOTCACHE_ASSIGN_OR_RETURN(
        int column,
        d.EmitOne("aten.view.default", {TensorArg(keep), IntsArg({n, 1})}));
    AOTCACHE_ASSIGN_OR_RETURN(
        rows, d.EmitOne("aten.where.self",
                        {TensorArg(column), TensorArg(rows), NumberArg(0)}));
    return absl::OkStatus();
  };
  if (bags != offsets.shape[0]) {
    AOTCACHE_ASSIGN_OR_RETURN(
        int inside,
        d.EmitOne("aten.lt.Scalar", {TensorArg(bag_of), IntArg(bags)}));
    AOTCACHE_RETURN_IF_ERROR(zero_rows_unless(inside));
    AOTCACHE_ASSIGN_OR_RETURN(
        bag_of,
        d.EmitOne("aten.where.self",
                  {TensorArg(inside), TensorArg(bag_of), IntArg(bags - 1)}));
  }
  int kept = -1;  // bool per index: not padding_idx.
  if (padding >= 0) {
    AOTCACHE_ASSIGN_OR_RETURN(
        kept, d.EmitOne("aten.ne.Scalar", {d.arg(1), IntArg(padding)}));
    AOTCACHE_RETURN_IF_ERROR(zero_rows_unless(kept));
  }
  if (weighted) {
    AOTCACHE_ASSIGN_OR_RETURN(
        int column,
        d.EmitOne("aten.view.default", {d.arg(6), IntsArg({n, 1})}));
    AOTCACHE_ASSIGN_OR_RETURN(
        rows,
        d.EmitOne("aten.mul.Tensor", {TensorArg(rows), TensorArg(column)}));
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int zeros, d.EmitOne("aten.zeros.default",
                           {IntsArg({bags, dim}), DTypeArg(weight.dtype),
                            NoneArg(), NoneArg(), NoneArg()}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int sums, d.EmitOne("aten.index_add.default",
                          {TensorArg(zeros), IntArg(0), TensorArg(bag_of),
                           TensorArg(rows), IntArg(1)}));
  // Results 1 to 3 are torch's bookkeeping for its own backward, whose
  // shapes depend on its kernel's path (an empty offset2bag on its fast
  // path): where the graph declares another shape, zeros of that shape.
  auto internal = [&](int r, int value) -> absl::StatusOr<int> {
    std::optional<Meta> declared = d.declared(r);
    if (!declared.has_value() || declared->shape == d.meta(value).shape) {
      return value;
    }
    return full(declared->shape, 0, declared->dtype);
  };
  auto finish = [&](int out, int bag_of, int sizes,
                    int max_indices) -> absl::StatusOr<std::vector<int>> {
    std::vector<int> results = {out, bag_of, sizes, max_indices};
    for (int r = 1; r < 4; ++r) {
      AOTCACHE_ASSIGN_OR_RETURN(results[r], internal(r, results[r]));
    }
    return results;
  };
  if (mode == kSum) {
    AOTCACHE_ASSIGN_OR_RETURN(int sizes, full({bags}, 0, v1::DTYPE_INT64));
    AOTCACHE_ASSIGN_OR_RETURN(int max_indices,
                              full({bags}, 0, v1::DTYPE_INT64));
    return finish(sums, bag_of, sizes, max_indices);
  }
  // mean: the bag's count of kept rows, 1 for an empty bag (its sum is 0).
  AOTCACHE_ASSIGN_OR_RETURN(int each, full({n}, 1, v1::DTYPE_INT64));
  if (kept >= 0) {
    AOTCACHE_ASSIGN_OR_RETURN(
        each, d.EmitOne("aten.where.self",
                        {TensorArg(kept), TensorArg(each), IntArg(0)}));
  }
  AOTCACHE_ASSIGN_OR_RETURN(int empty, full({bags}, 0, v1::DTYPE_INT64));
  AOTCACHE_ASSIGN_OR_RETURN(
      int sizes, d.EmitOne("aten.index_add.default",
                           {TensorArg(empty), IntArg(0), TensorArg(bag_of),
                            TensorArg(each), IntArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int none, d.EmitOne("aten.eq.Scalar", {TensorArg(sizes), IntArg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int divisor, d.EmitOne("aten.where.self",
                             {TensorArg(none), IntArg(1), TensorArg(sizes)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int column,
      d.EmitOne("aten.view.default", {TensorArg(divisor), IntsArg({bags, 1})}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int means,
      d.EmitOne("aten.div.Tensor", {TensorArg(sums), TensorArg(column)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int max_indices,
      d.EmitOne("aten.clone.default", {TensorArg(sizes), NoneArg()}));
  return finish(means, bag_of, sizes, max_indices);
}

}  // namespace

namespace decompositions_internal {

const std::vector<Decomposition>& EmbeddingBagDecompositions() {
  static const auto* table = new std::vector<Decomposition>{
      {"_embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool "
       "scale_grad_by_freq=False, int mode=0, bool sparse=False, Tensor? "
       "per_sample_weights=None, bool include_last_offset=False, int "
       "padding_idx=-1) -> (Tensor, Tensor, Tensor, Tensor)",
       EmbeddingBag},
      {"_embedding_bag_forward_only(Tensor weight, Tensor indices, Tensor "
       "offsets, bool scale_grad_by_freq=False, int mode=0, bool "
       "sparse=False, Tensor? per_sample_weights=None, bool "
       "include_last_offset=False, int padding_idx=-1) -> (Tensor, Tensor, "
       "Tensor, Tensor)",
       EmbeddingBag},
  };
  return *table;
}

}  // namespace decompositions_internal
}  // namespace aotcache
