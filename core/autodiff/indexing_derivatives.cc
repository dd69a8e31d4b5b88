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
                 {"aten.index_select.default", IndexSelect},
                 {"aten.index_add.default", IndexAdd}});
}

}  // namespace aotcache
