#include "core/autodiff/derivatives.h"

#include <algorithm>

#include "core/autodiff/conv_derivatives.h"
#include "core/autodiff/indexing_derivatives.h"
#include "core/autodiff/linalg_derivatives.h"
#include "core/autodiff/loss_derivatives.h"
#include "core/autodiff/norm_derivatives.h"
#include "core/autodiff/pointwise_derivatives.h"
#include "core/autodiff/pooling_derivatives.h"
#include "core/autodiff/random_derivatives.h"
#include "core/autodiff/scan_derivatives.h"

namespace aotcache {
namespace {

using C = GradContext;
BoundArg T(int local) { return TensorArg(local); }
BoundArg N(double v) { return NumberArg(v); }

int WrapDim(int64_t d, int64_t rank) {
  return static_cast<int>(d < 0 ? d + std::max<int64_t>(rank, 1) : d);
}

// expand: the gradient summed over the expanded dims (SetGrad reduces it to
// the input's shape).
void Expand(C& c) { c.SetGrad(0, *c.grad()); }

// --- Reductions and normalizations -----------------------------------------

// g (reduced over `dims`, without keepdim unless `keepdim`) expanded back to
// the input's shape.
int ExpandReduced(C& c, int g, std::vector<int64_t> dims, bool keepdim) {
  const Meta& in = c.InputMeta(0);
  if (!keepdim && in.dim() > 0) {
    if (dims.empty()) {
      for (int64_t d = 0; d < in.dim(); ++d) dims.push_back(d);
    }
    for (int64_t& d : dims) d = WrapDim(d, in.dim());
    std::sort(dims.begin(), dims.end());
    for (int64_t d : dims)
      g = c.Op("aten.unsqueeze.default", {T(g), IntArg(d)});
  }
  return c.Op("aten.expand.default", {T(g), IntsArg(in.shape), BoolArg(false)});
}

std::vector<int64_t> DimsOf(const BoundArg& a) {
  return a.is_none() ? std::vector<int64_t>{} : a.ints;
}

int64_t ReducedCount(const Meta& in, const std::vector<int64_t>& dims) {
  if (dims.empty()) return in.numel();
  int64_t n = 1;
  for (int64_t d : dims)
    n *= in.dim() == 0 ? 1 : in.shape[WrapDim(d, in.dim())];
  return n;
}

void Sum(C& c) { c.SetGrad(0, ExpandReduced(c, *c.grad(), {}, false)); }
void SumDim(C& c) {
  c.SetGrad(0, ExpandReduced(c, *c.grad(), DimsOf(c.arg(1)), c.arg(2).b));
}
void Mean(C& c) {
  int g = c.Op("aten.div.Tensor",
               {T(*c.grad()), N(static_cast<double>(c.InputMeta(0).numel()))});
  c.SetGrad(0, ExpandReduced(c, g, {}, false));
}
void MeanDim(C& c) {
  std::vector<int64_t> dims = DimsOf(c.arg(1));
  double n = static_cast<double>(ReducedCount(c.InputMeta(0), dims));
  int g = c.Op("aten.div.Tensor", {T(*c.grad()), N(n)});
  c.SetGrad(0, ExpandReduced(c, g, dims, c.arg(2).b));
}
// var: grad * 2 (x - mean(x)) / (n - correction), the mean over the
// reduced dims (derivatives.yaml's var_backward).
void VarCorrection(C& c) {
  std::vector<int64_t> dims = DimsOf(c.arg(1));
  double n = static_cast<double>(ReducedCount(c.InputMeta(0), dims));
  double correction = c.arg(2).is_none() ? 1.0 : c.Number(2);
  std::vector<int64_t> all = dims;
  if (all.empty()) {
    for (int64_t d = 0; d < c.InputMeta(0).dim(); ++d) all.push_back(d);
  }
  int mean = c.Op("aten.mean.dim",
                  {T(c.Input(0)), IntsArg(all), BoolArg(true), NoneArg()});
  int centered = c.Op("aten.sub.Tensor", {T(c.Input(0)), T(mean), N(1)});
  int g = c.Op("aten.mul.Tensor",
               {T(*c.grad()), N(2.0 / std::max(0.0, n - correction))});
  c.SetGrad(0, c.Op("aten.mul.Tensor",
                    {T(ExpandReduced(c, g, dims, c.arg(3).b)), T(centered)}));
}
// amax: the gradient is shared equally among the maxima.
void Amax(C& c) {
  std::vector<int64_t> dims = c.arg(1).ints;
  bool keepdim = c.arg(2).b;
  int y = ExpandReduced(c, c.Result(), dims, keepdim);
  int mask = c.Op("aten.eq.Tensor", {T(c.Input(0)), T(y)});
  std::vector<int64_t> all = dims;
  if (all.empty()) {
    for (int64_t d = 0; d < c.InputMeta(0).dim(); ++d) all.push_back(d);
  }
  int count = c.Op("aten.sum.dim_IntList",
                   {T(mask), IntsArg(all), BoolArg(true), NoneArg()});
  int g = ExpandReduced(c, *c.grad(), dims, keepdim);
  int share = c.Op(
      "aten.div.Tensor",
      {T(g),
       T(c.Op("aten.expand.default",
              {T(count), IntsArg(c.InputMeta(0).shape), BoolArg(false)}))});
  c.SetGrad(0, c.Op("aten.mul.Tensor", {T(share), T(mask)}));
}

// max(self): grad spread evenly over the elements equal to the result, or
// over the NaNs when it is NaN (evenly_distribute_backward).
void MaxAll(C& c) {
  int x = c.Input(0), y = c.Result();
  int mask = c.Op("aten.eq.Tensor", {T(x), T(y)});
  int nan = c.Op("aten.ne.Tensor", {T(x), T(x)});
  int y_nan = c.Op("aten.ne.Tensor", {T(y), T(y)});
  mask = c.Op("aten.where.self", {T(y_nan), T(nan), T(mask)});
  int count = c.Op("aten.sum.default", {T(mask), NoneArg()});
  int share = c.Op("aten.div.Tensor", {T(*c.grad()), T(count)});
  c.SetGrad(0, c.Op("aten.mul.Tensor", {T(mask), T(share)}));
}

void Softmax(C& c) {
  c.SetGrad(0, c.Op("aten._softmax_backward_data.default",
                    {T(*c.grad()), T(c.Result()), IntArg(c.arg(1).i),
                     DTypeArg(c.InputMeta(0).dtype)}));
}
void LogSoftmax(C& c) {
  c.SetGrad(0, c.Op("aten._log_softmax_backward_data.default",
                    {T(*c.grad()), T(c.Result()), IntArg(c.arg(1).i),
                     DTypeArg(c.InputMeta(0).dtype)}));
}

void LayerNorm(C& c) {
  if (!c.grad(0).has_value())
    return;  // Only the normalized output is differentiable.
  bool has_weight = !c.arg(2).is_none(), has_bias = !c.arg(3).is_none();
  std::vector<int> r = c.OpN(
      "aten.native_layer_norm_backward.default",
      {T(*c.grad(0)), T(c.Input(0)), IntsArg(c.arg(1).ints), T(c.Result(1)),
       T(c.Result(2)), has_weight ? T(c.Input(2)) : NoneArg(),
       has_bias ? T(c.Input(3)) : NoneArg(),
       IntsArg({c.needs(0), c.needs(2), c.needs(3)})});
  c.SetGrad(0, r[0]);
  if (has_weight) c.SetGrad(2, r[1]);
  if (has_bias) c.SetGrad(3, r[2]);
}

void MseLoss(C& c) {
  int g =
      c.Op("aten.mse_loss_backward.default",
           {T(*c.grad()), T(c.Input(0)), T(c.Input(1)), IntArg(c.arg(2).i)});
  c.SetGrad(0, g);
  if (c.needs(1)) c.SetGrad(1, c.Op("aten.neg.default", {T(g)}));
}

void Cat(C& c) {
  int g = *c.grad();
  int64_t dim = WrapDim(c.arg(1).i, c.ResultMeta().dim());
  int64_t at = 0;
  for (int e = 0; e < c.num_elements(0); ++e) {
    const Meta& part = c.InputMeta(0, e);
    if (part.dim() == 1 && part.shape[0] == 0) continue;  // Skipped by cat.
    int64_t len = part.shape[dim];
    c.SetGrad(0,
              c.Op("aten.slice.Tensor", {T(g), IntArg(dim), IntArg(at),
                                         IntArg(at + len), IntArg(1)}),
              e);
    at += len;
  }
}

// --- Views and scatters -----------------------------------------------------

void Reshape(C& c) {
  c.SetGrad(0, c.Op("aten.view.default", {T(c.Contiguous(*c.grad())),
                                          IntsArg(c.InputMeta(0).shape)}));
}
void Transpose2(C& c) { c.SetGrad(0, c.Op("aten.t.default", {T(*c.grad())})); }
void Transpose(C& c) {
  c.SetGrad(0, c.Op("aten.transpose.int",
                    {T(*c.grad()), IntArg(c.arg(1).i), IntArg(c.arg(2).i)}));
}
void Permute(C& c) {
  const std::vector<int64_t>& dims = c.arg(1).ints;
  std::vector<int64_t> inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    inverse[WrapDim(dims[i], static_cast<int64_t>(dims.size()))] =
        static_cast<int64_t>(i);
  }
  c.SetGrad(0, c.Op("aten.permute.default", {T(*c.grad()), IntsArg(inverse)}));
}
void Unsqueeze(C& c) {
  int64_t d = WrapDim(c.arg(1).i, c.ResultMeta().dim());
  c.SetGrad(0, c.Op("aten.squeeze.dim", {T(*c.grad()), IntArg(d)}));
}
void Squeeze(C& c) {
  const Meta& in = c.InputMeta(0);
  if (in.dim() == c.ResultMeta().dim()) {
    c.SetGrad(0, *c.grad());
    return;
  }
  c.SetGrad(0, c.Op("aten.unsqueeze.default",
                    {T(*c.grad()), IntArg(WrapDim(c.arg(1).i, in.dim()))}));
}
void Slice(C& c) {
  int zeros = c.Zeros(c.InputMeta(0));
  c.SetGrad(
      0, c.Op("aten.slice_scatter.default", {T(zeros), T(*c.grad()), c.arg(1),
                                             c.arg(2), c.arg(3), c.arg(4)}));
}
void Select(C& c) {
  int zeros = c.Zeros(c.InputMeta(0));
  c.SetGrad(0, c.Op("aten.select_scatter.default",
                    {T(zeros), T(*c.grad()), c.arg(1), c.arg(2)}));
}
void AsStrided(C& c) {
  const Meta& in = c.InputMeta(0);
  const Meta& out = c.ResultMeta();
  if (!in.IsContiguous()) {
    c.Unsupported("as_strided of a non-contiguous tensor");
    return;
  }
  for (int64_t d = 0; d < out.dim(); ++d) {
    if (out.stride[d] == 0 && out.shape[d] > 1) {
      c.Unsupported("as_strided with overlapping elements");
      return;
    }
  }
  int zeros = c.Zeros(in);
  c.SetGrad(0, c.Op("aten.as_strided_scatter.default",
                    {T(zeros), T(*c.grad()), IntsArg(out.shape),
                     IntsArg(out.stride), IntArg(out.offset - in.offset)}));
}

void SelectScatter(C& c) {
  int g = *c.grad();
  if (c.needs(0)) {
    c.SetGrad(0, c.Op("aten.select_scatter.default",
                      {T(g), T(c.Zeros(c.InputMeta(1))), c.arg(2), c.arg(3)}));
  }
  if (c.needs(1))
    c.SetGrad(1, c.Op("aten.select.int", {T(g), c.arg(2), c.arg(3)}));
}
void SliceScatter(C& c) {
  int g = *c.grad();
  if (c.needs(0)) {
    c.SetGrad(0, c.Op("aten.slice_scatter.default",
                      {T(g), T(c.Zeros(c.InputMeta(1))), c.arg(2), c.arg(3),
                       c.arg(4), c.arg(5)}));
  }
  if (c.needs(1)) {
    c.SetGrad(1, c.Op("aten.slice.Tensor",
                      {T(g), c.arg(2), c.arg(3), c.arg(4), c.arg(5)}));
  }
}
void AsStridedScatter(C& c) {
  int g = c.Contiguous(*c.grad());
  if (c.needs(0)) {
    c.SetGrad(0, c.Op("aten.as_strided_scatter.default",
                      {T(g), T(c.Zeros(c.InputMeta(1))), c.arg(2), c.arg(3),
                       c.arg(4)}));
  }
  if (c.needs(1)) {
    c.SetGrad(1, c.Op("aten.as_strided.default",
                      {T(g), c.arg(2), c.arg(3), c.arg(4)}));
  }
}

const DerivativeRules& Rules() {
  static const DerivativeRules* rules = [] {
    auto* rules = new DerivativeRules{
        {"aten.sum.default", Sum},
        {"aten.sum.dim_IntList", SumDim},
        {"aten.mean.default", Mean},
        {"aten.mean.dim", MeanDim},
        {"aten.var.correction", VarCorrection},
        {"aten.amax.default", Amax},
        {"aten.max.default", MaxAll},
        {"aten._softmax.default", Softmax},
        {"aten._log_softmax.default", LogSoftmax},
        {"aten.native_layer_norm.default", LayerNorm},
        {"aten.mse_loss.default", MseLoss},
        {"aten.cat.default", Cat},
        {"aten.view.default", Reshape},
        {"aten._reshape_alias.default", Reshape},
        {"aten._unsafe_view.default", Reshape},
        {"aten.t.default", Transpose2},
        {"aten.transpose.int", Transpose},
        {"aten.permute.default", Permute},
        {"aten.expand.default", Expand},
        {"aten.unsqueeze.default", Unsqueeze},
        {"aten.squeeze.dim", Squeeze},
        {"aten.slice.Tensor", Slice},
        {"aten.select.int", Select},
        {"aten.as_strided.default", AsStrided},
        {"aten.select_scatter.default", SelectScatter},
        {"aten.slice_scatter.default", SliceScatter},
        {"aten.as_strided_scatter.default", AsStridedScatter},
    };
    AddPointwiseDerivatives(rules);
    AddLinalgDerivatives(rules);
    AddLossDerivatives(rules);
    AddIndexingDerivatives(rules);
    AddConvDerivatives(rules);
    AddNormDerivatives(rules);
    AddScanDerivatives(rules);
    AddPoolingDerivatives(rules);
    AddRandomDerivatives(rules);
    return rules;
  }();
  return *rules;
}

}  // namespace

DerivativeRule FindDerivative(absl::string_view qualified_name) {
  auto it = Rules().find(qualified_name);
  return it == Rules().end() ? nullptr : it->second;
}

}  // namespace aotcache
