// The decompositions of im2col and col2im (F.unfold and F.fold;
// decompositions.h). Each sliding block's positions along a spatial dim are
// an index tensor built from aranges: im2col gathers them (index_select on
// the rows, then the columns, zeros where a block reads padding), col2im
// adds the blocks back (index_add on the columns, then the rows, contributions
// that fall in the padding dropped). Values move without arithmetic, so
// im2col is exact (inf and NaN included); col2im sums overlapping blocks in
// another order than torch, which can differ in the last bit. Their
// gradients are those of the ops they become: each other's, as torch's.
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/decompositions.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

using decompositions_internal::ArgError;
using decompositions_internal::ClampIndex;
using Results = absl::StatusOr<std::vector<int>>;

// Sliding blocks along one spatial dim of size `in`.
struct Blocks {
  int64_t in, kernel, dilation, padding, stride, count;
};

absl::StatusOr<std::vector<Blocks>> BlocksOf(Decomposer& d,
                                             const std::vector<int64_t>& in,
                                             int first) {
  const char* names[] = {"kernel_size", "dilation", "padding", "stride"};
  std::vector<Blocks> blocks(2);
  for (int a = 0; a < 4; ++a) {
    const std::vector<int64_t>& v = d.arg(first + a).ints;
    if (v.size() != 2) return ArgError(names[a], "must have two entries");
    for (int dim = 0; dim < 2; ++dim) {
      if (v[dim] < (a == 2 ? 0 : 1)) {
        return ArgError(names[a],
                        a == 2 ? "must not be negative" : "must be positive");
      }
    }
  }
  for (int dim = 0; dim < 2; ++dim) {
    Blocks& b = blocks[dim];
    b.in = in[dim];
    b.kernel = d.arg(first).ints[dim];
    b.dilation = d.arg(first + 1).ints[dim];
    b.padding = d.arg(first + 2).ints[dim];
    b.stride = d.arg(first + 3).ints[dim];
    int64_t room = b.in + 2 * b.padding - b.dilation * (b.kernel - 1) - 1;
    if (room < 0) {
      return ArgError("kernel_size",
                      absl::StrCat("the block's span exceeds the padded input ",
                                   "along spatial dim ", dim));
    }
    b.count = room / b.stride + 1;
  }
  return blocks;
}

// Positions read by each (kernel offset, block) pair, kernel-major, as a
// flat int64 tensor clamped into [0, in); `valid` gets a bool tensor of the
// same shape saying which lie inside the input (-1 when all do).
absl::StatusOr<int> Positions(Decomposer& d, const Blocks& b, int* valid) {
  auto range = [&](int64_t n, int64_t step) -> absl::StatusOr<int> {
    AOTCACHE_ASSIGN_OR_RETURN(
        int r,
        d.EmitOne("aten.arange.default", {IntArg(n), DTypeArg(v1::DTYPE_INT64),
                                          NoneArg(), NoneArg(), NoneArg()}));
    return d.EmitOne("aten.mul.Scalar", {TensorArg(r), IntArg(step)});
  };
  AOTCACHE_ASSIGN_OR_RETURN(int offsets, range(b.kernel, b.dilation));
  AOTCACHE_ASSIGN_OR_RETURN(int starts, range(b.count, b.stride));
  AOTCACHE_ASSIGN_OR_RETURN(
      int column, d.EmitOne("aten.view.default",
                            {TensorArg(offsets), IntsArg({b.kernel, 1})}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int sum, d.EmitOne("aten.add.Tensor",
                         {TensorArg(column), TensorArg(starts), IntArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int flat, d.EmitOne("aten.view.default",
                          {TensorArg(sum), IntsArg({b.kernel * b.count})}));
  *valid = -1;
  if (b.padding == 0) return flat;
  AOTCACHE_ASSIGN_OR_RETURN(
      int raw, d.EmitOne("aten.sub.Scalar",
                         {TensorArg(flat), IntArg(b.padding), IntArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(int clamped, ClampIndex(d, raw, 0, b.in - 1));
  // Inside the input exactly where clamping moved nothing.
  AOTCACHE_ASSIGN_OR_RETURN(
      *valid,
      d.EmitOne("aten.eq.Tensor", {TensorArg(clamped), TensorArg(raw)}));
  return clamped;
}

// x with zeros where `valid` (a flat mask along `dim`, one of the last two
// of a rank-`rank` tensor) is false.
absl::StatusOr<int> ZeroOutside(Decomposer& d, int x, int valid, int dim,
                                int rank) {
  if (valid < 0) return x;
  std::vector<int64_t> shape = {-1};
  if (dim == rank - 2) shape.push_back(1);
  AOTCACHE_ASSIGN_OR_RETURN(
      int mask,
      d.EmitOne("aten.view.default", {TensorArg(valid), IntsArg(shape)}));
  return d.EmitOne("aten.where.self",
                   {TensorArg(mask), TensorArg(x), NumberArg(0)});
}

// x (.., C, p, q, r, s), with `batch` leading dims, as (.., C, p, r, q, s)
// in a contiguous copy.
absl::StatusOr<int> SwapMiddle(Decomposer& d, int x, size_t batch) {
  std::vector<int64_t> order;
  for (size_t i = 0; i < batch + 2; ++i) order.push_back(i);
  int64_t c = static_cast<int64_t>(batch);
  order.insert(order.end(), {c + 3, c + 2, c + 4});
  AOTCACHE_ASSIGN_OR_RETURN(
      int moved,
      d.EmitOne("aten.permute.default", {TensorArg(x), IntsArg(order)}));
  return d.EmitOne("aten.clone.default",
                   {TensorArg(moved), StringArg("torch.contiguous_format")});
}

std::vector<int64_t> Concat(std::vector<int64_t> a,
                            const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// im2col(self, kernel_size, dilation, padding, stride): (N, C, H, W) or
// (C, H, W) to (N, C kh kw, L), each column one block, rows ordered channel,
// kernel row, kernel column.
Results Im2col(Decomposer& d) {
  const Meta x = d.tensor(0);
  if (x.dim() != 3 && x.dim() != 4) {
    return ArgError("self", "must be (N, C, H, W) or (C, H, W)");
  }
  if (x.shape[x.dim() - 3] == 0) return ArgError("self", "has no channels");
  AOTCACHE_ASSIGN_OR_RETURN(
      std::vector<Blocks> b,
      BlocksOf(d, {x.shape[x.dim() - 2], x.shape[x.dim() - 1]}, 1));
  int rank = x.dim();
  int valid_h, valid_w;
  AOTCACHE_ASSIGN_OR_RETURN(int rows, Positions(d, b[0], &valid_h));
  AOTCACHE_ASSIGN_OR_RETURN(int cols, Positions(d, b[1], &valid_w));
  AOTCACHE_ASSIGN_OR_RETURN(
      int by_rows, d.EmitOne("aten.index_select.default",
                             {d.arg(0), IntArg(rank - 2), TensorArg(rows)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int blocks,
      d.EmitOne("aten.index_select.default",
                {TensorArg(by_rows), IntArg(rank - 1), TensorArg(cols)}));
  AOTCACHE_ASSIGN_OR_RETURN(blocks,
                            ZeroOutside(d, blocks, valid_h, rank - 2, rank));
  AOTCACHE_ASSIGN_OR_RETURN(blocks,
                            ZeroOutside(d, blocks, valid_w, rank - 1, rank));
  // (.., C, kh, oh, kw, ow) -> (.., C, kh, kw, oh, ow).
  std::vector<int64_t> batch(x.shape.begin(), x.shape.end() - 3);
  int64_t c = x.shape[rank - 3];
  AOTCACHE_ASSIGN_OR_RETURN(
      int split,
      d.EmitOne("aten.view.default",
                {TensorArg(blocks),
                 IntsArg(Concat(batch, {c, b[0].kernel, b[0].count, b[1].kernel,
                                        b[1].count}))}));
  AOTCACHE_ASSIGN_OR_RETURN(int dense, SwapMiddle(d, split, batch.size()));
  return d.Emit(
      "aten._unsafe_view.default",
      {TensorArg(dense), IntsArg(Concat(batch, {c * b[0].kernel * b[1].kernel,
                                                b[0].count * b[1].count}))});
}

// col2im(self, output_size, kernel_size, dilation, padding, stride): the
// inverse layout, blocks summed where they overlap.
Results Col2im(Decomposer& d) {
  const Meta x = d.tensor(0);
  if (x.dim() != 2 && x.dim() != 3) {
    return ArgError("self", "must be (N, C kh kw, L) or (C kh kw, L)");
  }
  const std::vector<int64_t>& size = d.arg(1).ints;
  if (size.size() != 2 || size[0] < 1 || size[1] < 1) {
    return ArgError("output_size", "must be two positive sizes");
  }
  AOTCACHE_ASSIGN_OR_RETURN(std::vector<Blocks> b, BlocksOf(d, size, 2));
  int64_t area = b[0].kernel * b[1].kernel;
  int64_t rows = x.shape[x.dim() - 2], columns = x.shape[x.dim() - 1];
  if (rows % area != 0) {
    return ArgError("self", absl::StrCat("has ", rows,
                                         " rows, not a multiple of the "
                                         "kernel's ",
                                         area));
  }
  if (columns != b[0].count * b[1].count) {
    return ArgError(
        "self", absl::StrCat("has ", columns, " blocks where ", b[0].count, "x",
                             b[1].count, " fit the output"));
  }
  std::vector<int64_t> batch(x.shape.begin(), x.shape.end() - 2);
  int64_t c = rows / area;
  int rank = static_cast<int>(batch.size()) + 3;  // (.., C, H, W).
  AOTCACHE_ASSIGN_OR_RETURN(
      int split,
      d.EmitOne("aten.view.default",
                {d.arg(0), IntsArg(Concat(batch, {c, b[0].kernel, b[1].kernel,
                                                  b[0].count, b[1].count}))}));
  AOTCACHE_ASSIGN_OR_RETURN(int dense, SwapMiddle(d, split, batch.size()));
  AOTCACHE_ASSIGN_OR_RETURN(
      int blocks,
      d.EmitOne("aten._unsafe_view.default",
                {TensorArg(dense),
                 IntsArg(Concat(batch, {c, b[0].kernel * b[0].count,
                                        b[1].kernel * b[1].count}))}));
  int valid_h, valid_w;
  AOTCACHE_ASSIGN_OR_RETURN(int row_at, Positions(d, b[0], &valid_h));
  AOTCACHE_ASSIGN_OR_RETURN(int col_at, Positions(d, b[1], &valid_w));
  AOTCACHE_ASSIGN_OR_RETURN(blocks,
                            ZeroOutside(d, blocks, valid_h, rank - 2, rank));
  AOTCACHE_ASSIGN_OR_RETURN(blocks,
                            ZeroOutside(d, blocks, valid_w, rank - 1, rank));
  auto zeros = [&](std::vector<int64_t> shape) {
    return d.EmitOne("aten.zeros.default",
                     {IntsArg(std::move(shape)), DTypeArg(x.dtype), NoneArg(),
                      NoneArg(), NoneArg()});
  };
  AOTCACHE_ASSIGN_OR_RETURN(
      int wide, zeros(Concat(batch, {c, b[0].kernel * b[0].count, size[1]})));
  AOTCACHE_ASSIGN_OR_RETURN(
      int by_cols,
      d.EmitOne("aten.index_add.default",
                {TensorArg(wide), IntArg(rank - 1), TensorArg(col_at),
                 TensorArg(blocks), IntArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(int image,
                            zeros(Concat(batch, {c, size[0], size[1]})));
  return d.Emit("aten.index_add.default",
                {TensorArg(image), IntArg(rank - 2), TensorArg(row_at),
                 TensorArg(by_cols), IntArg(1)});
}

}  // namespace

namespace decompositions_internal {

const std::vector<Decomposition>& FoldDecompositions() {
  static const auto* table = new std::vector<Decomposition>{
      {"im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] "
       "padding, int[2] stride) -> Tensor",
       Im2col},
      {"col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] "
       "dilation, int[2] padding, int[2] stride) -> Tensor",
       Col2im},
  };
  return *table;
}

}  // namespace decompositions_internal
}  // namespace aotcache
