// The decompositions of ops that move or repeat elements (decompositions.h):
// flip (index_select with a descending arange), roll (a cat of two slices
// per dim), repeat (an expand of self with a unit dim before each, made
// contiguous and merged), constant_pad_nd (slices for negative pads, a
// cat with filled blocks for positive ones) and pixel_(un)shuffle (a view,
// a permute, a contiguous copy). Their gradients are those of
// the ops they become, which are torch's: the gradient moved back.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/graph/decompositions.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

using decompositions_internal::ArgError;
using decompositions_internal::WrapDim;
using Results = absl::StatusOr<std::vector<int>>;

absl::StatusOr<int> Slice(Decomposer& d, const BoundArg& x, int64_t dim,
                          int64_t start, int64_t end) {
  return d.EmitOne("aten.slice.Tensor",
                   {x, IntArg(dim), IntArg(start), IntArg(end), IntArg(1)});
}

// A copy of x (flip and roll by nothing still give a new tensor).
Results Copy(Decomposer& d, const BoundArg& x) {
  return d.Emit("aten.clone.default", {x, NoneArg()});
}

// flip(self, dims).
Results Flip(Decomposer& d) {
  const Meta self = d.tensor(0);
  BoundArg x = d.arg(0);
  std::vector<bool> done(std::max<int64_t>(self.dim(), 1), false);
  bool flipped = false;
  for (int64_t raw : d.arg(1).ints) {
    AOTCACHE_ASSIGN_OR_RETURN(int64_t dim, WrapDim("dims", raw, self.dim()));
    if (done[dim]) return ArgError("dims", absl::StrCat("dim ", raw, " twice"));
    done[dim] = true;
    if (self.dim() == 0) continue;
    int64_t n = self.shape[dim];
    AOTCACHE_ASSIGN_OR_RETURN(
        int index, d.EmitOne("aten.arange.start_step",
                             {IntArg(n - 1), IntArg(-1), IntArg(-1),
                              DTypeArg(v1::DTYPE_INT64), NoneArg(), NoneArg(),
                              NoneArg()}));
    AOTCACHE_ASSIGN_OR_RETURN(int out,
                              d.EmitOne("aten.index_select.default",
                                        {x, IntArg(dim), TensorArg(index)}));
    x = TensorArg(out);
    flipped = true;
  }
  if (!flipped) return Copy(d, x);
  return std::vector<int>{x.values[0]};
}

// roll(self, shifts, dims): per dim, the last `shift` elements first.
Results Roll(Decomposer& d) {
  const Meta self = d.tensor(0);
  const std::vector<int64_t>& shifts = d.arg(1).ints;
  const std::vector<int64_t>& dims = d.arg(2).ints;
  if (dims.empty()) {
    return ArgError("dims",
                    "roll of the flattened tensor is not supported; "
                    "name the dims");
  }
  if (shifts.size() != dims.size()) {
    return ArgError("shifts", absl::StrCat(shifts.size(), " shifts for ",
                                           dims.size(), " dims"));
  }
  BoundArg x = d.arg(0);
  bool rolled = false;
  for (size_t k = 0; k < dims.size(); ++k) {
    AOTCACHE_ASSIGN_OR_RETURN(int64_t dim,
                              WrapDim("dims", dims[k], self.dim()));
    int64_t n = self.dim() == 0 ? 1 : self.shape[dim];
    if (n == 0) continue;
    int64_t s = ((shifts[k] % n) + n) % n;
    if (s == 0) continue;
    AOTCACHE_ASSIGN_OR_RETURN(int tail, Slice(d, x, dim, n - s, n));
    AOTCACHE_ASSIGN_OR_RETURN(int head, Slice(d, x, dim, 0, n - s));
    AOTCACHE_ASSIGN_OR_RETURN(
        int out, d.EmitOne("aten.cat.default",
                           {TensorListArg({tail, head}), IntArg(dim)}));
    x = TensorArg(out);
    rolled = true;
  }
  if (!rolled) return Copy(d, x);
  return std::vector<int>{x.values[0]};
}

// repeat(self, repeats): self seen as (1, s0, 1, s1, ...), expanded to
// (r0, s0, r1, s1, ...), made contiguous, merged to (r0 s0, r1 s1, ...).
Results Repeat(Decomposer& d) {
  const Meta self = d.tensor(0);
  const std::vector<int64_t>& repeats = d.arg(1).ints;
  if (static_cast<int64_t>(repeats.size()) < self.dim()) {
    return ArgError("repeats",
                    absl::StrCat(repeats.size(), " repeats for a tensor of ",
                                 self.dim(), " dimensions"));
  }
  std::vector<int64_t> shape(repeats.size() - self.dim(), 1);
  shape.insert(shape.end(), self.shape.begin(), self.shape.end());
  std::vector<int64_t> unit, expanded, merged;
  for (size_t k = 0; k < repeats.size(); ++k) {
    if (repeats[k] < 0) {
      return ArgError("repeats", absl::StrCat("negative repeat ", repeats[k]));
    }
    unit.insert(unit.end(), {1, shape[k]});
    expanded.insert(expanded.end(), {repeats[k], shape[k]});
    merged.push_back(repeats[k] * shape[k]);
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int seen, d.EmitOne("aten.view.default", {d.arg(0), IntsArg(unit)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int wide,
      d.EmitOne("aten.expand.default",
                {TensorArg(seen), IntsArg(expanded), BoolArg(false)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int dense,
      d.EmitOne("aten.clone.default",
                {TensorArg(wide), StringArg("torch.contiguous_format")}));
  return d.Emit("aten._unsafe_view.default",
                {TensorArg(dense), IntsArg(merged)});
}

// pixel_shuffle(self (*, C r r, H, W), r) -> (*, C, H r, W r), and
// pixel_unshuffle its inverse: self seen with r split out of its dims,
// permuted, made contiguous and merged, as torch's.
Results PixelShuffle(Decomposer& d, bool shuffle) {
  const Meta self = d.tensor(0);
  int64_t r = d.arg(1).i;
  int64_t n = self.dim();
  if (n < 3 || r <= 0) {
    return ArgError("self",
                    "must have 3 or more dims, and the factor be positive");
  }
  std::vector<int64_t> batch(self.shape.begin(), self.shape.end() - 3);
  int64_t c = self.shape[n - 3], h = self.shape[n - 2], w = self.shape[n - 1];
  if (shuffle ? c % (r * r) != 0 : (h % r != 0 || w % r != 0)) {
    return ArgError(
        "self", shuffle ? "channels must be divisible by the factor squared"
                        : "height and width must be divisible by the factor");
  }
  std::vector<int64_t> split = batch, merged = batch, order;
  int64_t b = static_cast<int64_t>(batch.size());
  for (int64_t k = 0; k < b; ++k) order.push_back(k);
  if (shuffle) {  // (*, C, r, r, H, W) -> (*, C, H, r, W, r)
    split.insert(split.end(), {c / (r * r), r, r, h, w});
    order.insert(order.end(), {b, b + 3, b + 1, b + 4, b + 2});
    merged.insert(merged.end(), {c / (r * r), h * r, w * r});
  } else {  // (*, C, H, r, W, r) -> (*, C, r, r, H, W)
    split.insert(split.end(), {c, h / r, r, w / r, r});
    order.insert(order.end(), {b, b + 2, b + 4, b + 1, b + 3});
    merged.insert(merged.end(), {c * r * r, h / r, w / r});
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int seen, d.EmitOne("aten.view.default", {d.arg(0), IntsArg(split)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int moved,
      d.EmitOne("aten.permute.default", {TensorArg(seen), IntsArg(order)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int dense,
      d.EmitOne("aten.clone.default",
                {TensorArg(moved), StringArg("torch.contiguous_format")}));
  return d.Emit("aten._unsafe_view.default",
                {TensorArg(dense), IntsArg(merged)});
}
Results Shuffle(Decomposer& d) { return PixelShuffle(d, true); }
Results Unshuffle(Decomposer& d) { return PixelShuffle(d, false); }

// constant_pad_nd(self, pad, value): pad[2k], pad[2k + 1] before and after
// dim (rank - 1 - k); a negative pad cuts instead.
Results ConstantPadNd(Decomposer& d) {
  const Meta self = d.tensor(0);
  const std::vector<int64_t>& pad = d.arg(1).ints;
  if (pad.size() % 2 != 0 ||
      static_cast<int64_t>(pad.size()) > 2 * self.dim()) {
    return ArgError("pad",
                    absl::StrCat(pad.size(), " pads: two per dim, for at most ",
                                 self.dim(), " dims"));
  }
  BoundArg x = d.arg(0);
  for (size_t k = 0; 2 * k < pad.size(); ++k) {
    int64_t dim = self.dim() - 1 - static_cast<int64_t>(k);
    int64_t before = pad[2 * k], after = pad[2 * k + 1];
    Meta now = d.meta(x.values[0]);
    int64_t n = now.shape[dim];
    if (n + std::min<int64_t>(before, 0) + std::min<int64_t>(after, 0) < 0) {
      return ArgError("pad", absl::StrCat("cuts more than dim ", dim, "'s ", n,
                                          " elements"));
    }
    if (before < 0 || after < 0) {
      AOTCACHE_ASSIGN_OR_RETURN(int cut,
                                Slice(d, x, dim, std::max<int64_t>(-before, 0),
                                      n + std::min<int64_t>(after, 0)));
      x = TensorArg(cut);
      now = d.meta(cut);
    }
    std::vector<int> parts;
    auto block = [&](int64_t size) -> absl::StatusOr<int> {
      std::vector<int64_t> shape = now.shape;
      shape[dim] = size;
      return d.EmitOne("aten.full.default",
                       {IntsArg(shape), d.arg(2), DTypeArg(self.dtype),
                        NoneArg(), NoneArg(), NoneArg()});
    };
    if (before > 0) {
      AOTCACHE_ASSIGN_OR_RETURN(int b, block(before));
      parts.push_back(b);
    }
    parts.push_back(x.values[0]);
    if (after > 0) {
      AOTCACHE_ASSIGN_OR_RETURN(int a, block(after));
      parts.push_back(a);
    }
    if (parts.size() > 1) {
      AOTCACHE_ASSIGN_OR_RETURN(
          int out,
          d.EmitOne("aten.cat.default", {TensorListArg(parts), IntArg(dim)}));
      x = TensorArg(out);
    }
  }
  if (x.values[0] == d.arg(0).values[0]) return Copy(d, x);
  return std::vector<int>{x.values[0]};
}

}  // namespace

namespace decompositions_internal {

const std::vector<Decomposition>& ReshapingDecompositions() {
  static const auto* table = new std::vector<Decomposition>{
      {"flip(Tensor self, int[] dims) -> Tensor", Flip},
      {"roll(Tensor self, int[1] shifts, int[1] dims=[]) -> Tensor", Roll},
      {"repeat(Tensor self, SymInt[] repeats) -> Tensor", Repeat},
      {"constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor",
       ConstantPadNd},
      {"pixel_shuffle(Tensor self, int upscale_factor) -> Tensor", Shuffle},
      {"pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor",
       Unshuffle},
  };
  return *table;
}

}  // namespace decompositions_internal
}  // namespace aotcache
