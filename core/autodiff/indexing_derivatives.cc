#include "core/autodiff/indexing_derivatives.h"

namespace aotcache {
namespace {

using C = GradContext;

// weight: embedding_dense_backward(grad, indices, num_weights, padding_idx,
// scale_grad_by_freq); indices are not differentiable. Sparse gradients
// (sparse=True) are not supported.
void Embedding(C& c) {
  if (!c.needs(0)) return;
  if (c.arg(4).b) {
    c.Unsupported("sparse gradients (sparse=True)");
    return;
  }
  c.SetGrad(0, c.Op("aten.embedding_dense_backward.default",
                    {TensorArg(*c.grad()), TensorArg(c.Input(1)),
                     IntArg(c.InputMeta(0).shape[0]), IntArg(c.arg(2).i),
                     BoolArg(c.arg(3).b)}));
}

// self: scatter_add(zeros(self), dim, index, grad) (derivatives.yaml's
// gather_backward).
void Gather(C& c) {
  if (!c.needs(0)) return;
  if (c.arg(3).b) {
    c.Unsupported("sparse gradients (sparse_grad=True)");
    return;
  }
  c.SetGrad(0, c.Op("aten.scatter_add.default",
                    {TensorArg(c.Zeros(c.InputMeta(0))), IntArg(c.arg(1).i),
                     TensorArg(c.Input(2)), TensorArg(*c.grad())}));
}

// self: grad; src: grad.gather(dim, index), which torch's autograd takes
// only when index has src's shape.
void ScatterAdd(C& c) {
  if (c.needs(0)) c.SetGrad(0, *c.grad());
  if (!c.needs(3)) return;
  if (c.InputMeta(2).shape != c.InputMeta(3).shape) {
    c.Unsupported("the gradient of a src larger than index (torch refuses it)");
    return;
  }
  c.SetGrad(
      3, c.Op("aten.gather.default", {TensorArg(*c.grad()), IntArg(c.arg(1).i),
                                      TensorArg(c.Input(2)), BoolArg(false)}));
}

// `mask` (bool) as 0s and 1s of `dtype`, as torch's mask.to(dtype).
int AsNumbers(C& c, int mask, DType dtype) {
  return c.Op("aten._to_copy.default", {TensorArg(mask), DTypeArg(dtype)});
}

// scatter_reduce (torch's scatter_reduce_backward): sum passes the gradient
// to self and gathers it for src; mean divides both by the count reduced at
// the position; amax and amin share it evenly among the elements equal to
// the result (self's and src's alike, as torch counts them even without
// include_self). Without include_self, self's positions that received a
// scatter get none. prod is refused.
void ScatterReduce(C& c) {
  if (!c.needs(0) && !c.needs(3)) return;
  const std::string& reduce = c.arg(4).s;
  const bool include_self = c.arg(5).b;
  const int dim = static_cast<int>(c.arg(1).i);
  const Meta& self = c.InputMeta(0);
  const bool src_like_index = c.InputMeta(2).shape == c.InputMeta(3).shape;
  if (reduce == "prod") {
    c.Unsupported("the gradient of scatter_reduce with reduce='prod'");
    return;
  }
  if (!src_like_index && (c.needs(3) || reduce == "amax" || reduce == "amin")) {
    c.Unsupported("the gradient of a src larger than index (torch refuses it)");
    return;
  }
  const int grad = *c.grad();
  const int index = c.Input(2);
  auto gather = [&](int x) {
    return c.Op("aten.gather.default",
                {TensorArg(x), IntArg(dim), TensorArg(index), BoolArg(false)});
  };
  auto scatter_add = [&](int into, int values) {
    return c.Op(
        "aten.scatter_add.default",
        {TensorArg(into), IntArg(dim), TensorArg(index), TensorArg(values)});
  };
  auto full = [&](const std::vector<int64_t>& shape, double value) {
    return c.Op("aten.full.default",
                {IntsArg(shape), NumberArg(value), DTypeArg(self.dtype)});
  };
  auto div = [&](int a, int b) {
    return c.Op("aten.div.Tensor", {TensorArg(a), TensorArg(b)});
  };
  auto mul = [&](int a, int b) {
    return c.Op("aten.mul.Tensor", {TensorArg(a), TensorArg(b)});
  };
  int grad_self = grad, grad_src = -1;
  if (reduce == "sum") {
    if (c.needs(3)) grad_src = gather(grad);
  } else if (reduce == "mean") {
    int counted = scatter_add(full(self.shape, include_self ? 1 : 0),
                              full(c.InputMeta(2).shape, 1));
    int none = c.Op("aten.eq.Scalar", {TensorArg(counted), NumberArg(0)});
    int count = c.Op("aten.where.self",
                     {TensorArg(none), NumberArg(1), TensorArg(counted)});
    grad_self = div(grad, count);
    if (c.needs(3)) grad_src = div(gather(grad), gather(count));
  } else {
    const int result = c.Result();
    const int value = gather(result);
    const int self_is_result =
        c.Op("aten.eq.Tensor", {TensorArg(c.Input(0)), TensorArg(result)});
    const int src_is_result =
        c.Op("aten.eq.Tensor", {TensorArg(c.Input(3)), TensorArg(value)});
    const int shared =
        div(grad, scatter_add(AsNumbers(c, self_is_result, self.dtype),
                              AsNumbers(c, src_is_result, self.dtype)));
    grad_self = mul(AsNumbers(c, self_is_result, self.dtype), shared);
    if (c.needs(3)) {
      grad_src = mul(AsNumbers(c, src_is_result, self.dtype), gather(shared));
    }
  }
  if (c.needs(0)) {
    if (!include_self) {
      int touched = scatter_add(c.Zeros(self), full(c.InputMeta(2).shape, 1));
      int scattered =
          c.Op("aten.gt.Scalar", {TensorArg(touched), NumberArg(0)});
      grad_self = c.Op("aten.where.self", {TensorArg(scattered), NumberArg(0),
                                           TensorArg(grad_self)});
    }
    c.SetGrad(0, grad_self);
  }
  if (c.needs(3)) c.SetGrad(3, grad_src);
}

// self: index_add(zeros(self), dim, index, grad) (index_select_backward).
void IndexSelect(C& c) {
  if (!c.needs(0)) return;
  c.SetGrad(0, c.Op("aten.index_add.default",
                    {TensorArg(c.Zeros(c.InputMeta(0))), IntArg(c.arg(1).i),
                     TensorArg(c.Input(2)), TensorArg(*c.grad()), IntArg(1)}));
}

// self: grad; source: grad.index_select(dim, index) * alpha.
void IndexAdd(C& c) {
  if (c.needs(0)) c.SetGrad(0, *c.grad());
  if (!c.needs(3)) return;
  int g =
      c.Op("aten.index_select.default",
           {TensorArg(*c.grad()), IntArg(c.arg(1).i), TensorArg(c.Input(2))});
  if (c.Number(4) != 1) {
    g = c.Op("aten.mul.Scalar", {TensorArg(g), NumberArg(c.Number(4))});
  }
  c.SetGrad(3, g);
}

}  // namespace

void AddIndexingDerivatives(DerivativeRules* rules) {
  rules->insert({{"aten.embedding.default", Embedding},
                 {"aten.gather.default", Gather},
                 {"aten.scatter_add.default", ScatterAdd},
                 {"aten.scatter_reduce.two", ScatterReduce},
                 {"aten.index_select.default", IndexSelect},
                 {"aten.index_add.default", IndexAdd}});
}

}  // namespace aotcache
