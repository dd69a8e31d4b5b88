// The decomposition of native_group_norm (decompositions.h): the input seen
// as (N, G, C/G * HxW), each group normalized by its mean and biased
// variance, then the per-channel affine; it returns torch's (out, mean,
// rstd). The gradient is that of the formula, which is torch's.
#include "absl/strings/str_cat.h"
#include "core/graph/decompositions.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

using decompositions_internal::ArgError;
using Results = absl::StatusOr<std::vector<int>>;

// native_group_norm(input, weight?, bias?, N, C, HxW, group, eps).
Results NativeGroupNorm(Decomposer& d) {
  const Meta x = d.tensor(0);
  int64_t n = d.arg(3).i, c = d.arg(4).i, hw = d.arg(5).i, g = d.arg(6).i;
  if (g <= 0 || c % g != 0) {
    return ArgError("group", absl::StrCat(c, " channels in ", g, " groups"));
  }
  if (x.dim() < 2 || x.shape[0] != n || x.shape[1] != c ||
      n * c * hw != x.numel()) {
    return ArgError("input", "its shape is not (N, C, ...) of N, C and HxW");
  }
  for (int k : {1, 2}) {
    if (!d.arg(k).is_none() &&
        (d.tensor(k).dim() != 1 || d.tensor(k).shape[0] != c)) {
      return ArgError(k == 1 ? "weight" : "bias",
                      absl::StrCat("must hold ", c, " values"));
    }
  }
  BoundArg input = d.arg(0);
  if (!x.IsContiguous()) {
    AOTCACHE_ASSIGN_OR_RETURN(
        int dense, d.EmitOne("aten.clone.default",
                             {input, StringArg("torch.contiguous_format")}));
    input = TensorArg(dense);
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      int grouped,
      d.EmitOne("aten.view.default", {input, IntsArg({n, g, c / g * hw})}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int mean, d.EmitOne("aten.mean.dim", {TensorArg(grouped), IntsArg({2}),
                                            BoolArg(true), NoneArg()}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int var,
      d.EmitOne("aten.var.correction",
                {TensorArg(grouped), IntsArg({2}), IntArg(0), BoolArg(true)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int shifted,
      d.EmitOne("aten.add.Scalar", {TensorArg(var), d.arg(7), NumberArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int rstd, d.EmitOne("aten.rsqrt.default", {TensorArg(shifted)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int centered,
      d.EmitOne("aten.sub.Tensor",
                {TensorArg(grouped), TensorArg(mean), NumberArg(1)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int normed,
      d.EmitOne("aten.mul.Tensor", {TensorArg(centered), TensorArg(rstd)}));
  AOTCACHE_ASSIGN_OR_RETURN(
      int out,
      d.EmitOne("aten.view.default", {TensorArg(normed), IntsArg(x.shape)}));
  std::vector<int64_t> per_channel(x.dim() - 1, 1);
  per_channel[0] = c;
  const char* affine[] = {"aten.mul.Tensor", "aten.add.Tensor"};
  for (int k : {1, 2}) {
    if (d.arg(k).is_none()) continue;
    AOTCACHE_ASSIGN_OR_RETURN(
        int seen,
        d.EmitOne("aten.view.default", {d.arg(k), IntsArg(per_channel)}));
    std::vector<BoundArg> args = {TensorArg(out), TensorArg(seen)};
    if (k == 2) args.push_back(NumberArg(1));
    AOTCACHE_ASSIGN_OR_RETURN(out, d.EmitOne(affine[k - 1], std::move(args)));
  }
  AOTCACHE_ASSIGN_OR_RETURN(int mean_ng,
                            d.EmitOne("aten._unsafe_view.default",
                                      {TensorArg(mean), IntsArg({n, g})}));
  AOTCACHE_ASSIGN_OR_RETURN(int rstd_ng,
                            d.EmitOne("aten._unsafe_view.default",
                                      {TensorArg(rstd), IntsArg({n, g})}));
  return std::vector<int>{out, mean_ng, rstd_ng};
}

}  // namespace

namespace decompositions_internal {

const std::vector<Decomposition>& NormDecompositions() {
  static const auto* table = new std::vector<Decomposition>{
      {"native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt "
       "N, SymInt C, SymInt HxW, int group, float eps) -> (Tensor, Tensor, "
       "Tensor)",
       NativeGroupNorm},
  };
  return *table;
}

}  // namespace decompositions_internal
}  // namespace aotcache
