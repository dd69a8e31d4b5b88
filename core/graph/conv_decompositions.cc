// The transposed convolution (conv_transpose1d/2d/3d, nn.ConvTranspose*d),
// rewritten as the convolution it equals: the input with stride - 1 zeros
// inserted between its elements and padded by dilation * (kernel - 1) -
// padding on each side (output_padding more at the end; a negative pad
// crops), convolved at stride 1 with the weight's channels swapped per group
// and its taps flipped. Exact: every output element sums the same products.
// Its gradients are those of the ops it becomes (a slice of the gradient for
// the input, the weight's moved back), the convolution keeps its native
// kernels, and eager's convolution_backward with transposed=True is never
// needed.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/graph/decompositions.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

using decompositions_internal::ArgError;
using Results = absl::StatusOr<std::vector<int>>;

// convolution's arguments by position.
enum ConvArg {
  kInput,
  kWeight,
  kBias,
  kStride,
  kPadding,
  kDilation,
  kTransposed,
  kOutputPadding,
  kGroups
};

bool IsTransposed(const std::vector<BoundArg>& args) {
  return args.size() > kTransposed && args[kTransposed].b;
}

// A per-dim list given once for all dims or once per dim.
absl::StatusOr<std::vector<int64_t>> PerDim(const BoundArg& a,
                                            absl::string_view name,
                                            size_t dims) {
  if (a.ints.size() == dims) return a.ints;
  if (a.ints.size() == 1) return std::vector<int64_t>(dims, a.ints[0]);
  return ArgError(name, absl::StrCat(a.ints.size(), " entries for ", dims,
                                     " spatial dims"));
}

// x with its spatial dim `dim` spread by `stride` (zeros between its
// elements), padded by `lo` before and `hi` after (a negative pad crops).
absl::StatusOr<int> SpreadAndPad(Decomposer& d, int x, int64_t dim,
                                 int64_t stride, int64_t lo, int64_t hi) {
  Meta m = d.meta(x);
  int64_t n = m.shape[dim];
  int64_t spread = n == 0 ? 0 : (n - 1) * stride + 1;
  int64_t before = std::max<int64_t>(lo, 0), after = std::max<int64_t>(hi, 0);
  if (spread != n || before != 0 || after != 0) {
    std::vector<int64_t> shape = m.shape;
    shape[dim] = before + spread + after;
    AOTCACHE_ASSIGN_OR_RETURN(
        int zeros,
        d.EmitOne("aten.zeros.default", {IntsArg(shape), DTypeArg(m.dtype),
                                         NoneArg(), NoneArg(), NoneArg()}));
    AOTCACHE_ASSIGN_OR_RETURN(
        x,
        d.EmitOne("aten.slice_scatter.default",
                  {TensorArg(zeros), TensorArg(x), IntArg(dim), IntArg(before),
                   IntArg(before + spread), IntArg(stride)}));
  }
  if (lo >= 0 && hi >= 0) return x;
  int64_t size = d.meta(x).shape[dim];
  return d.EmitOne(
      "aten.slice.Tensor",
      {TensorArg(x), IntArg(dim), IntArg(std::max<int64_t>(-lo, 0)),
       IntArg(size - std::max<int64_t>(-hi, 0)), IntArg(1)});
}

// The convolution weight (out, in / groups, k...) of the transposed weight
// (in, out / groups, k...): channels swapped per group, taps flipped.
absl::StatusOr<int> ForwardWeight(Decomposer& d, const BoundArg& weight,
                                  int64_t groups) {
  const Meta w = d.tensor(kWeight);
  int64_t in = w.shape[0], out_per_group = w.shape[1];
  std::vector<int64_t> grouped = {groups, in / groups, out_per_group};
  std::vector<int64_t> merged = {out_per_group * groups, in / groups};
  for (size_t k = 2; k < w.shape.size(); ++k) {
    grouped.push_back(w.shape[k]);
    merged.push_back(w.shape[k]);
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int seen, d.EmitOne("aten.view.default", {weight, IntsArg(grouped)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int swapped,
      d.EmitOne("aten.transpose.int", {TensorArg(seen), IntArg(1), IntArg(2)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int dense,
      d.EmitOne("aten.clone.default",
                {TensorArg(swapped), StringArg("torch.contiguous_format")}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int result,
      d.EmitOne("aten.view.default", {TensorArg(dense), IntsArg(merged)}));
  for (size_t k = 2; k < w.shape.size(); ++k) {
    int64_t taps = w.shape[k];
    if (taps <= 1) continue;
    AOTCACHE_ASSIGN_OR_RETURN(
        int reversed, d.EmitOne("aten.arange.start_step",
                                {IntArg(taps - 1), IntArg(-1), IntArg(-1),
                                 DTypeArg(v1::DTYPE_INT64), NoneArg(),
                                 NoneArg(), NoneArg()}));
    AOTCACHE_ASSIGN_OR_RETURN(
        result, d.EmitOne("aten.index_select.default",
                          {TensorArg(result), IntArg(static_cast<int64_t>(k)),
                           TensorArg(reversed)}));
  }
  return result;
}

Results TransposedConvolution(Decomposer& d) {
  const Meta x = d.tensor(kInput), w = d.tensor(kWeight);
  if (x.dim() < 3 || x.dim() > 5 || w.dim() != x.dim()) {
    return ArgError("weight",
                    "a transposed convolution takes (N, C, 1 to 3 "
                    "spatial dims) and a weight of as many dims");
  }
  size_t dims = static_cast<size_t>(x.dim()) - 2;
  int64_t groups = d.arg(kGroups).i;
  if (groups <= 0 || w.shape[0] != x.shape[1] || w.shape[0] % groups != 0) {
    return ArgError("weight",
                    absl::StrCat("a transposed weight's first dim is the "
                                 "input's channels, ",
                                 x.shape[1], ", divisible by groups=", groups));
  }
  AOTCACHE_ASSIGN_OR_RETURN(std::vector<int64_t> stride,
                            PerDim(d.arg(kStride), "stride", dims));
  AOTCACHE_ASSIGN_OR_RETURN(std::vector<int64_t> padding,
                            PerDim(d.arg(kPadding), "padding", dims));
  AOTCACHE_ASSIGN_OR_RETURN(std::vector<int64_t> dilation,
                            PerDim(d.arg(kDilation), "dilation", dims));
  AOTCACHE_ASSIGN_OR_RETURN(
      std::vector<int64_t> output_padding,
      PerDim(d.arg(kOutputPadding), "output_padding", dims));
  constexpr int64_t kMaxWindowArg = int64_t{1} << 20;  // As convolution's.
  for (size_t k = 0; k < dims; ++k) {
    if (stride[k] < 1 || stride[k] > kMaxWindowArg || dilation[k] < 1 ||
        dilation[k] > kMaxWindowArg || padding[k] < 0 ||
        padding[k] > kMaxWindowArg || output_padding[k] < 0 ||
        w.shape[2 + k] < 1) {
      return ArgError("stride",
                      "stride, dilation and the kernel must be "
                      "positive, padding and output_padding not "
                      "negative");
    }
    // torch's rule: output padding must be smaller than stride or dilation.
    if (output_padding[k] >= std::max(stride[k], dilation[k])) {
      return ArgError("output_padding",
                      "output padding must be smaller than either stride or "
                      "dilation");
    }
  }
  int spread = d.arg(kInput).values[0];
  for (size_t k = 0; k < dims; ++k) {
    int64_t reach = dilation[k] * (w.shape[2 + k] - 1) - padding[k];
    AOTCACHE_ASSIGN_OR_RETURN(
        spread, SpreadAndPad(d, spread, static_cast<int64_t>(2 + k), stride[k],
                             reach, reach + output_padding[k]));
  }
  AOTCACHE_ASSIGN_OR_RETURN(int weight,
                            ForwardWeight(d, d.arg(kWeight), groups));
  return d.Emit(
      "aten.convolution.default",
      {TensorArg(spread), TensorArg(weight), d.arg(kBias),
       IntsArg(std::vector<int64_t>(dims, 1)),
       IntsArg(std::vector<int64_t>(dims, 0)), IntsArg(dilation),
       BoolArg(false), IntsArg(std::vector<int64_t>(dims, 0)), IntArg(groups)});
}

}  // namespace

const std::vector<ConditionalDecomposition>& ConditionalDecompositions() {
  static const auto* table = new std::vector<ConditionalDecomposition>{
      {"aten.convolution.default", IsTransposed, TransposedConvolution},
  };
  return *table;
}

}  // namespace aotcache
