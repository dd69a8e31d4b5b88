#include "core/autodiff/scan_derivatives.h"

#include <algorithm>

namespace aotcache {
namespace {

using C = GradContext;
BoundArg T(int local) { return TensorArg(local); }

// cumsum(self, dim): the gradient summed from the end, flip(cumsum(flip(g)))
// as torch's cumsum_backward, the flips as index_selects with a descending
// arange; cast back when the sum ran in another dtype.
void Cumsum(C& c) {
  if (!c.needs(0)) return;
  const Meta in = c.InputMeta(0);
  int64_t dim = c.arg(1).i;
  if (dim < 0) dim += std::max<int64_t>(in.dim(), 1);
  int g = *c.grad();
  if (in.dim() > 0 && in.shape[dim] > 1) {
    int64_t n = in.shape[dim];
    int index =
        c.Op("aten.arange.start_step",
             {IntArg(n - 1), IntArg(-1), IntArg(-1), DTypeArg(v1::DTYPE_INT64),
              NoneArg(), NoneArg(), NoneArg()});
    auto flip = [&](int v) {
      return c.Op("aten.index_select.default", {T(v), IntArg(dim), T(index)});
    };
    g = flip(c.Op("aten.cumsum.default", {T(flip(g)), IntArg(dim), NoneArg()}));
  }
  if (c.ResultMeta(0).dtype != in.dtype) {
    g = c.Op("aten._to_copy.default",
             {T(g), DTypeArg(in.dtype), NoneArg(), NoneArg(), NoneArg(),
              BoolArg(false), NoneArg()});
  }
  c.SetGrad(0, g);
}

// sort and topk: each value's gradient back where it came from,
// scatter_add of the gradient at the indices into zeros (torch's
// value_selecting_reduction_backward).
void Sorted(C& c, int dim_arg) {
  if (!c.needs(0) || !c.grad(0).has_value()) return;
  int zeros = c.Zeros(c.InputMeta(0));
  c.SetGrad(
      0, c.Op("aten.scatter_add.default", {T(zeros), IntArg(c.arg(dim_arg).i),
                                           T(c.Result(1)), T(*c.grad(0))}));
}
void Sort(C& c) { Sorted(c, 1); }
void Topk(C& c) { Sorted(c, 2); }

}  // namespace

void AddScanDerivatives(DerivativeRules* rules) {
  rules->insert({{"aten.cumsum.default", Cumsum},
                 {"aten.sort.default", Sort},
                 {"aten.topk.default", Topk}});
}

}  // namespace aotcache
