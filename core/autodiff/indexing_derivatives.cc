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

}  // namespace

void AddIndexingDerivatives(DerivativeRules* rules) {
  rules->insert({{"aten.embedding.default", Embedding}});
}

}  // namespace aotcache
