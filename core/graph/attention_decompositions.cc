// Attention, as torch 2.x's make_fx records it (F.scaled_dot_product_attention
// and nn.MultiheadAttention inside nn.TransformerEncoderLayer):
// _scaled_dot_product_flash_attention_for_cpu(q, k, v, dropout_p, is_causal,
// attn_mask, scale) -> (output, logsumexp), rewritten into the math it
// computes: softmax(q @ k^T * scale + mask) @ v per batch and head, with
// dropout on the weights, and the scores' logsumexp. Its gradients are those
// of those ops; the results have eager's layouts (the output laid out as the
// query, the logsumexp as (batch, length, heads)), which the views a trace
// takes of them rely on. With fewer key/value heads than query heads
// (grouped-query attention), each key/value head serves its group of
// consecutive query heads, as enable_gqa. torch's math attention (taken with
// dropout) records _safe_softmax: a softmax that gives 0 on a row masked whole.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "core/graph/decompositions.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

using decompositions_internal::ArgError;
using Results = absl::StatusOr<std::vector<int>>;

// x (4-d, or 5-d from RepeatHeads) as a contiguous (batch * heads, rows,
// columns).
absl::StatusOr<int> Flat3(Decomposer& d, int x) {
  const Meta m = d.meta(x);
  const int64_t rows = m.shape[m.dim() - 2], columns = m.shape[m.dim() - 1];
  int64_t matrices = 1;
  for (int64_t k = 0; k + 2 < m.dim(); ++k) matrices *= m.shape[k];
  AOTCACHE_ASSIGN_OR_RETURN(
      int dense,
      d.EmitOne("aten.clone.default",
                {TensorArg(x), StringArg("torch.contiguous_format")}));
  return d.EmitOne("aten.view.default",
                   {TensorArg(dense), IntsArg({matrices, rows, columns})});
}

// x (contiguous) laid out in memory in the order of `like`'s strides (a
// dense layout, as empty_like(like) gives), same shape.
absl::StatusOr<int> LaidOutAs(Decomposer& d, int x, const Meta& like) {
  std::vector<int64_t> order(like.dim());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return like.stride[a] > like.stride[b];
  });
  bool identity = true;
  for (int64_t k = 0; k < like.dim(); ++k) identity &= order[k] == k;
  if (identity) return x;
  std::vector<int64_t> inverse(order.size());
  for (size_t k = 0; k < order.size(); ++k) inverse[order[k]] = k;
  AOTCACHE_ASSIGN_OR_RETURN(
      int permuted,
      d.EmitOne("aten.permute.default", {TensorArg(x), IntsArg(order)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int dense,
      d.EmitOne("aten.clone.default",
                {TensorArg(permuted), StringArg("torch.contiguous_format")}));
  return d.EmitOne("aten.permute.default",
                   {TensorArg(dense), IntsArg(inverse)});
}

// x (batch, kv_heads, length, features) with each head repeated for the
// `heads / kv_heads` query heads that share it, as torch's enable_gqa
// (repeat_interleave over the heads): a view, or x itself.
absl::StatusOr<int> RepeatHeads(Decomposer& d, int x, int64_t heads) {
  const Meta m = d.meta(x);
  if (m.shape[1] == heads) return x;
  const int64_t group = heads / m.shape[1];
  AOTCACHE_ASSIGN_OR_RETURN(int grouped, d.EmitOne("aten.unsqueeze.default",
                                                   {TensorArg(x), IntArg(2)}));
  return d.EmitOne("aten.expand.default",
                   {TensorArg(grouped), IntsArg({m.shape[0], m.shape[1], group,
                                                 m.shape[2], m.shape[3]})});
}

// The logsumexp of scores (4-d) over the last dim, as (batch, heads, rows)
// laid out as (batch, rows, heads).
absl::StatusOr<int> ScoresLogSumExp(Decomposer& d, int scores) {
  AOTCACHE_ASSIGN_OR_RETURN(
      int lse, decompositions_internal::LogSumExp(d, TensorArg(scores),
                                                  IntsArg({-1}), false));
  Meta layout = d.meta(lse);  // (batch, heads, rows): stride order 0 2 1
  layout.stride = {layout.shape[1] * layout.shape[2], 1, layout.shape[1]};
  return LaidOutAs(d, lse, layout);
}

// _scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p,
// is_causal, *, attn_mask, scale).
Results FlashAttentionForCpu(Decomposer& d) {
  const Meta q = d.tensor(0), k = d.tensor(1), v = d.tensor(2);
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) {
    return ArgError("query",
                    "query, key and value must be 4-d (batch, heads, "
                    "length, features)");
  }
  // Grouped-query attention: fewer key/value heads than query heads, each
  // shared by a group of consecutive query heads.
  if (k.shape[0] != q.shape[0] || v.shape[0] != q.shape[0] || k.shape[1] == 0 ||
      q.shape[1] % k.shape[1] != 0 || v.shape[1] != k.shape[1] ||
      k.shape[3] != q.shape[3] || v.shape[2] != k.shape[2]) {
    return ArgError("key", "query, key and value do not fit one another");
  }
  if (!IsFloating(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype) {
    return ArgError("query",
                    "query, key and value must share a floating dtype");
  }
  int64_t batch = q.shape[0], heads = q.shape[1], rows = q.shape[2];
  int64_t columns = k.shape[2];
  double dropout = d.arg(3).AsDouble();
  if (dropout < 0 || dropout > 1) {
    return ArgError("dropout_p", "must be in [0, 1]");
  }
  double scale = d.arg(6).is_none()
                     ? 1.0 / std::sqrt(static_cast<double>(q.shape[3]))
                     : d.arg(6).AsDouble();
  AOTCACHE_ASSIGN_OR_RETURN(int q3, Flat3(d, d.arg(0).values[0]));
  AOTCACHE_ASSIGN_OR_RETURN(int k_heads,
                            RepeatHeads(d, d.arg(1).values[0], heads));
  AOTCACHE_ASSIGN_OR_RETURN(int k3, Flat3(d, k_heads));
  AOTCACHE_ASSIGN_OR_RETURN(int v_heads,
                            RepeatHeads(d, d.arg(2).values[0], heads));
  AOTCACHE_ASSIGN_OR_RETURN(int v3, Flat3(d, v_heads));
  AOTCACHE_ASSIGN_OR_RETURN(
      int kt,
      d.EmitOne("aten.transpose.int", {TensorArg(k3), IntArg(1), IntArg(2)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int raw, d.EmitOne("aten.bmm.default", {TensorArg(q3), TensorArg(kt)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int scores,
      d.EmitOne("aten.view.default",
                {TensorArg(raw), IntsArg({batch, heads, rows, columns})}));
  AOTCACHE_ASSIGN_OR_RETURN(
      scores,
      d.EmitOne("aten.mul.Scalar", {TensorArg(scores), NumberArg(scale)}));
  if (d.arg(4).b) {  // is_causal: row i sees columns 0..i.
    AOTCACHE_ASSIGN_OR_RETURN(
        int row,
        d.EmitOne("aten.arange.start_step", {IntArg(0), IntArg(rows), IntArg(1),
                                             DTypeArg(v1::DTYPE_INT64),
                                             NoneArg(), NoneArg(), NoneArg()}));
    AOTCACHE_ASSIGN_OR_RETURN(
        row,
        d.EmitOne("aten.view.default", {TensorArg(row), IntsArg({rows, 1})}));
    AOTCACHE_ASSIGN_OR_RETURN(
        int column, d.EmitOne("aten.arange.start_step",
                              {IntArg(0), IntArg(columns), IntArg(1),
                               DTypeArg(v1::DTYPE_INT64), NoneArg(), NoneArg(),
                               NoneArg()}));
    AOTCACHE_ASSIGN_OR_RETURN(
        int seen,
        d.EmitOne("aten.le.Tensor", {TensorArg(column), TensorArg(row)}));
    AOTCACHE_ASSIGN_OR_RETURN(
        scores,
        d.EmitOne("aten.where.self",
                  {TensorArg(seen), TensorArg(scores), NumberArg(-INFINITY)}));
  }
  const BoundArg& mask = d.arg(5);
  if (!mask.is_none()) {
    if (d.tensor(5).dtype == v1::DTYPE_BOOL) {  // True: may attend.
      AOTCACHE_ASSIGN_OR_RETURN(
          scores, d.EmitOne("aten.where.self",
                            {mask, TensorArg(scores), NumberArg(-INFINITY)}));
    } else {
      AOTCACHE_ASSIGN_OR_RETURN(
          scores, d.EmitOne("aten.add.Tensor",
                            {TensorArg(scores), mask, NumberArg(1)}));
    }
    if (d.meta(scores).shape !=
        std::vector<int64_t>{batch, heads, rows, columns}) {
      return ArgError("attn_mask", "does not broadcast to the scores");
    }
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int weights, d.EmitOne("aten._softmax.default",
                             {TensorArg(scores), IntArg(-1), BoolArg(false)}));
  if (dropout > 0) {
    AOTCACHE_ASSIGN_OR_RETURN(
        std::vector<int> dropped,
        d.Emit("aten.native_dropout.default",
               {TensorArg(weights), NumberArg(dropout), BoolArg(true)}));
    weights = dropped[0];
  }
  AOTCACHE_ASSIGN_OR_RETURN(int w3, Flat3(d, weights));
  AOTCACHE_ASSIGN_OR_RETURN(
      int out3, d.EmitOne("aten.bmm.default", {TensorArg(w3), TensorArg(v3)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int out,
      d.EmitOne("aten.view.default",
                {TensorArg(out3), IntsArg({batch, heads, rows, v.shape[3]})}));
  Meta layout = q;
  layout.shape = d.meta(out).shape;
  AOTCACHE_ASSIGN_OR_RETURN(out, LaidOutAs(d, out, layout));
  AOTCACHE_ASSIGN_OR_RETURN(int lse, ScoresLogSumExp(d, scores));
  return std::vector<int>{out, lse};
}

// _safe_softmax(self, dim, dtype): softmax, but 0 in place of NaN on a row
// that is -inf throughout (a row the mask hides whole), as torch's math
// attention computes it.
Results SafeSoftmax(Decomposer& d) {
  const Meta self = d.tensor(0);
  if (!d.arg(2).is_none() && d.arg(2).dtype != self.dtype) {
    return ArgError("dtype", "a softmax into another dtype is not supported");
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int m, d.EmitOne("aten.amax.default",
                       {d.arg(0), IntsArg({d.arg(1).i}), BoolArg(true)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int hidden,
      d.EmitOne("aten.eq.Scalar", {TensorArg(m), NumberArg(-INFINITY)}));
  // The softmax of a hidden row taken over zeros, not -inf: its NaN would
  // reach the gradient through where's (0 * NaN), where eager's is 0.
  AOTCACHE_ASSIGN_OR_RETURN(
      int shown, d.EmitOne("aten.where.self",
                           {TensorArg(hidden), NumberArg(0), d.arg(0)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int softmax, d.EmitOne("aten._softmax.default",
                             {TensorArg(shown), d.arg(1), BoolArg(false)}));
  return d.Emit("aten.where.self",
                {TensorArg(hidden), NumberArg(0), TensorArg(softmax)});
}

}  // namespace

namespace decompositions_internal {

const std::vector<Decomposition>& AttentionDecompositions() {
  static const auto* table = new std::vector<Decomposition>{
      {"_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, "
       "Tensor value, float dropout_p=0.0, bool is_causal=False, *, Tensor? "
       "attn_mask=None, float? scale=None) -> (Tensor, Tensor)",
       FlashAttentionForCpu},
      {"_safe_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
       SafeSoftmax},
  };
  return *table;
}

}  // namespace decompositions_internal
}  // namespace aotcache
