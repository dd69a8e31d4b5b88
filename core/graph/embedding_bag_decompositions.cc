// The decomposition of _embedding_bag and _embedding_bag_forward_only
// (nn.EmbeddingBag, F.embedding_bag; decompositions.h): each index's bag
// from the offsets (a count of the offsets at or before it, torch's
// offset2bag) and the rows gathered (index_select). Sum and mean zero the
// rows at padding_idx, scale them by per_sample_weights and add them into
// their bags (index_add); mean divides by the bag's count of non-padding rows
// (an empty bag stays 0). Max takes, per bag and column, the row torch's
// kernel takes (TakeMaxRows) and gathers it; an empty bag is 0. The
// gradients are those of the ops they become: each row's bag gradient back
// to its weight row, for max only to the row taken, as torch's dense
// backward. scale_grad_by_freq and sparse gradients are refused by name.
#include <cmath>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/decompositions.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

using decompositions_internal::ArgError;
using Results = absl::StatusOr<std::vector<int>>;

constexpr int64_t kSum = 0, kMean = 1, kMax = 2;

absl::StatusOr<int> Full(Decomposer& d, std::vector<int64_t> shape,
                         BoundArg value, DType dtype) {
  return d.EmitOne("aten.full.default",
                   {IntsArg(std::move(shape)), std::move(value),
                    DTypeArg(dtype), NoneArg(), NoneArg(), NoneArg()});
}

// Mode max over `rows` ([n, dim], n > 0), index i in bag bag_of[i], kept
// where `keep` (bool [n], or -1 for every index), as torch's kernel: per bag
// and column, the first kept row, replaced by each later row greater than
// the one held. So a NaN first in its bag stays, a NaN after it is passed
// over, and of equal largest values the first is taken. Here: the first
// kept position, and the first position of the largest non-NaN value
// (scatter_reduce amax, then amin over the positions that hold it). Returns
// the bags' values (0 for an empty bag); per bag and column, the position
// in indices of the row taken (0 where none) and whether there is none.
struct MaxBags {
  int values, positions, empty;
};
absl::StatusOr<MaxBags> TakeMaxRows(Decomposer& d, int rows, int bag_of,
                                    int keep, int64_t bags) {
  const Meta row_meta = d.meta(rows);
  const int64_t n = row_meta.shape[0], dim = row_meta.shape[1];
  auto column = [&](int x) {
    return d.EmitOne("aten.view.default", {TensorArg(x), IntsArg({n, 1})});
  };
  auto where = [&](int cond, BoundArg a, BoundArg b) {
    return d.EmitOne("aten.where.self", {TensorArg(cond), a, b});
  };
  AOTCACHE_ASSIGN_OR_RETURN(int bag_column, column(bag_of));
  AOTCACHE_ASSIGN_OR_RETURN(
      int bag_index, d.EmitOne("aten.expand.default",
                               {TensorArg(bag_column), IntsArg({n, dim})}));
  auto scatter = [&](int self, int src, const char* reduce) {
    return d.EmitOne("aten.scatter_reduce.two",
                     {TensorArg(self), IntArg(0), TensorArg(bag_index),
                      TensorArg(src), StringArg(reduce), BoolArg(true)});
  };
  auto gather = [&](int from, int index) {
    return d.EmitOne("aten.gather.default", {TensorArg(from), IntArg(0),
                                             TensorArg(index), BoolArg(false)});
  };
  AOTCACHE_ASSIGN_OR_RETURN(
      int position,
      d.EmitOne("aten.arange.default", {IntArg(n), DTypeArg(v1::DTYPE_INT64),
                                        NoneArg(), NoneArg(), NoneArg()}));
  AOTCACHE_ASSIGN_OR_RETURN(int position_column, column(position));
  AOTCACHE_ASSIGN_OR_RETURN(
      int positions,
      d.EmitOne("aten.expand.default",
                {TensorArg(position_column), IntsArg({n, dim})}));
  AOTCACHE_ASSIGN_OR_RETURN(int none,
                            Full(d, {bags, dim}, IntArg(n), v1::DTYPE_INT64));
  // The first position per bag and column where `mask` holds, n if none.
  auto first_where = [&](int mask) -> absl::StatusOr<int> {
    AOTCACHE_ASSIGN_OR_RETURN(int masked,
                              where(mask, TensorArg(positions), IntArg(n)));
    return scatter(none, masked, "amin");
  };
  // Rows that may win: kept and not NaN; the others are -inf here.
  AOTCACHE_ASSIGN_OR_RETURN(
      int valid,
      d.EmitOne("aten.eq.Tensor", {TensorArg(rows), TensorArg(rows)}));
  int keep_column = -1;
  if (keep >= 0) {
    AOTCACHE_ASSIGN_OR_RETURN(keep_column, column(keep));
    AOTCACHE_ASSIGN_OR_RETURN(
        valid, where(keep_column, TensorArg(valid), BoolArg(false)));
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int candidates, where(valid, TensorArg(rows), NumberArg(-INFINITY)));
  AOTCACHE_ASSIGN_OR_RETURN(
      int lowest, Full(d, {bags, dim}, NumberArg(-INFINITY), row_meta.dtype));
  AOTCACHE_ASSIGN_OR_RETURN(int largest, scatter(lowest, candidates, "amax"));
  AOTCACHE_ASSIGN_OR_RETURN(int bag_largest, gather(largest, bag_index));
  AOTCACHE_ASSIGN_OR_RETURN(
      int equal, d.EmitOne("aten.eq.Tensor",
                           {TensorArg(candidates), TensorArg(bag_largest)}));
  AOTCACHE_ASSIGN_OR_RETURN(int holds,
                            where(valid, TensorArg(equal), BoolArg(false)));
  AOTCACHE_ASSIGN_OR_RETURN(int first_largest, first_where(holds));
  // The first kept row, taken where it is NaN; none in an empty bag.
  int first_kept = -1;
  if (keep_column >= 0) {
    AOTCACHE_ASSIGN_OR_RETURN(
        int kept, d.EmitOne("aten.expand.default",
                            {TensorArg(keep_column), IntsArg({n, dim})}));
    AOTCACHE_ASSIGN_OR_RETURN(first_kept, first_where(kept));
  } else {
    AOTCACHE_ASSIGN_OR_RETURN(first_kept, scatter(none, positions, "amin"));
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int empty,
      d.EmitOne("aten.eq.Scalar", {TensorArg(first_kept), IntArg(n)}));
  AOTCACHE_ASSIGN_OR_RETURN(int kept_at,
                            where(empty, IntArg(0), TensorArg(first_kept)));
  AOTCACHE_ASSIGN_OR_RETURN(int kept_row, gather(rows, kept_at));
  AOTCACHE_ASSIGN_OR_RETURN(
      int kept_is_nan,
      d.EmitOne("aten.ne.Tensor", {TensorArg(kept_row), TensorArg(kept_row)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int take_kept, where(empty, BoolArg(true), TensorArg(kept_is_nan)));
  AOTCACHE_ASSIGN_OR_RETURN(int taken_at, where(take_kept, TensorArg(kept_at),
                                                TensorArg(first_largest)));
  AOTCACHE_ASSIGN_OR_RETURN(int taken, gather(rows, taken_at));
  AOTCACHE_ASSIGN_OR_RETURN(int values,
                            where(empty, NumberArg(0), TensorArg(taken)));
  return MaxBags{values, taken_at, empty};
}

// _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
// per_sample_weights?, include_last_offset, padding_idx): output, offset2bag,
// bag_size, max_indices (torch's values for sum and mean: bag_size is 0 for
// sum and max_indices is bag_size).
Results EmbeddingBag(Decomposer& d) {
  const Meta weight = d.tensor(0), indices = d.tensor(1), offsets = d.tensor(2);
  const int64_t mode = d.arg(4).i;
  if (mode != kSum && mode != kMean && mode != kMax) {
    return ArgError("mode", "must be 0 (sum), 1 (mean) or 2 (max)");
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
    return Full(d, std::move(shape), IntArg(value), dtype);
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
  // The rows, zero at padding_idx and past the last offset (for max: not
  // kept), scaled by the per-sample weights.
  AOTCACHE_ASSIGN_OR_RETURN(
      int rows,
      d.EmitOne("aten.index_select.default", {d.arg(0), IntArg(0), d.arg(1)}));
  int keep = -1;  // For max: bool per index, or -1 for all.
  auto keep_only = [&](int mask) -> absl::Status {
    if (mode == kMax) {
      if (keep < 0) {
        keep = mask;
        return absl::OkStatus();
      }
      AOTCACHE_ASSIGN_OR_RETURN(
          keep, d.EmitOne("aten.where.self",
                          {TensorArg(keep), TensorArg(mask), BoolArg(false)}));
      return absl::OkStatus();
    }
    AOTCACHE_ASSIGN_OR_RETURN(
        int column,
        d.EmitOne("aten.view.default", {TensorArg(mask), IntsArg({n, 1})}));
    AOTCACHE_ASSIGN_OR_RETURN(
        rows, d.EmitOne("aten.where.self",
                        {TensorArg(column), TensorArg(rows), NumberArg(0)}));
    return absl::OkStatus();
  };
  if (bags != offsets.shape[0]) {
    AOTCACHE_ASSIGN_OR_RETURN(
        int inside,
        d.EmitOne("aten.lt.Scalar", {TensorArg(bag_of), IntArg(bags)}));
    AOTCACHE_RETURN_IF_ERROR(keep_only(inside));
    AOTCACHE_ASSIGN_OR_RETURN(
        bag_of,
        d.EmitOne("aten.where.self",
                  {TensorArg(inside), TensorArg(bag_of), IntArg(bags - 1)}));
  }
  int kept = -1;  // bool per index: not padding_idx.
  if (padding >= 0) {
    AOTCACHE_ASSIGN_OR_RETURN(
        kept, d.EmitOne("aten.ne.Scalar", {d.arg(1), IntArg(padding)}));
    AOTCACHE_RETURN_IF_ERROR(keep_only(kept));
  }
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
  // The count of kept rows in each bag (torch's bag_size).
  auto kept_counts = [&]() -> absl::StatusOr<int> {
    AOTCACHE_ASSIGN_OR_RETURN(int each, full({n}, 1, v1::DTYPE_INT64));
    if (kept >= 0) {
      AOTCACHE_ASSIGN_OR_RETURN(
          each, d.EmitOne("aten.where.self",
                          {TensorArg(kept), TensorArg(each), IntArg(0)}));
    }
    AOTCACHE_ASSIGN_OR_RETURN(int empty, full({bags}, 0, v1::DTYPE_INT64));
    return d.EmitOne("aten.index_add.default",
                     {TensorArg(empty), IntArg(0), TensorArg(bag_of),
                      TensorArg(each), IntArg(1)});
  };
  if (mode == kMax) {
    AOTCACHE_ASSIGN_OR_RETURN(int sizes, kept_counts());
    if (n == 0) {
      AOTCACHE_ASSIGN_OR_RETURN(int values, full({bags, dim}, 0, weight.dtype));
      AOTCACHE_ASSIGN_OR_RETURN(int max_indices,
                                full({bags, dim}, 0, v1::DTYPE_INT64));
      return finish(values, bag_of, sizes, max_indices);
    }
    AOTCACHE_ASSIGN_OR_RETURN(MaxBags max,
                              TakeMaxRows(d, rows, bag_of, keep, bags));
    // max_indices: the index of the row taken, 0 for an empty bag.
    AOTCACHE_ASSIGN_OR_RETURN(
        int index_column,
        d.EmitOne("aten.view.default", {d.arg(1), IntsArg({n, 1})}));
    AOTCACHE_ASSIGN_OR_RETURN(
        int index_rows,
        d.EmitOne("aten.expand.default",
                  {TensorArg(index_column), IntsArg({n, dim})}));
    AOTCACHE_ASSIGN_OR_RETURN(
        int taken, d.EmitOne("aten.gather.default",
                             {TensorArg(index_rows), IntArg(0),
                              TensorArg(max.positions), BoolArg(false)}));
    AOTCACHE_ASSIGN_OR_RETURN(
        int max_indices,
        d.EmitOne("aten.where.self",
                  {TensorArg(max.empty), IntArg(0), TensorArg(taken)}));
    return finish(max.values, bag_of, sizes, max_indices);
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
  if (mode == kSum) {
    AOTCACHE_ASSIGN_OR_RETURN(int sizes, full({bags}, 0, v1::DTYPE_INT64));
    AOTCACHE_ASSIGN_OR_RETURN(int max_indices,
                              full({bags}, 0, v1::DTYPE_INT64));
    return finish(sums, bag_of, sizes, max_indices);
  }
  // mean: the bag's count of kept rows, 1 for an empty bag (its sum is 0).
  AOTCACHE_ASSIGN_OR_RETURN(int sizes, kept_counts());
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
