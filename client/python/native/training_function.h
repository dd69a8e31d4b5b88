// Training mode's autograd node (SEMANTICS.md §5): the forward artifact runs
// as one node of torch's autograd graph whose backward runs the backward
// artifact on the tangents, in PyTorch's order. In C++ rather than as a
// Python torch.autograd.Function: a step then costs no Python beyond the
// call (the Python package applies the epilogue: write-back, view replay).
//
// The node's inputs are the function's inputs that are not members of a
// synthetic base, then the synthetic bases: they receive the gradients. Its
// outputs are the new values of mutated inputs, the user outputs that do
// not lie in an input's memory (those are regenerated as views of the
// caller's tensors), then the intermediate bases.
//
// Thread-safety: RunTraining may be called from several threads at once,
// and backward runs on whichever thread torch's engine uses; neither needs
// the GIL.
#ifndef AOTCACHE_CLIENT_PYTHON_NATIVE_TRAINING_FUNCTION_H_
#define AOTCACHE_CLIENT_PYTHON_NATIVE_TRAINING_FUNCTION_H_

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "client/cpp/client.h"

namespace aotcache {

// What the metadata says about running one compiled function in training
// mode, computed once per function (aotcache/_runtime.py's CompiledEntry).
struct TrainingPlan {
  // The forward's results: new values of mutated inputs, user outputs,
  // intermediate bases, then the values saved for backward.
  int num_mutated = 0;
  int num_user = 0;
  int num_bases = 0;
  // The user outputs the node returns, in order.
  std::vector<int> function_user;
  // Per input: a member of a synthetic base (its gradient goes to the
  // base); its data is written by the epilogue.
  std::vector<bool> member;
  std::vector<bool> mutated_data;
  // Per tangent: the node output whose gradient it is (-1: none, zeros),
  // and its shape and dtype.
  std::vector<int> tangent_positions;
  std::vector<std::vector<int64_t>> tangent_shapes;
  std::vector<at::ScalarType> tangent_types;
  // Node outputs no gradient flows back through.
  std::vector<int> non_differentiable;

  // Whether the sizes agree and every position names one of the node's
  // outputs (the new values of mutated inputs, the user outputs it
  // returns, the bases).
  bool Consistent() const;
};

struct TrainingStep {
  std::shared_ptr<CachedFunction> function;
  TrainingPlan plan;
};

// Runs step's forward on `inputs` (the function's inputs: their memory) as
// one autograd node over `differentiable`, and returns the node's outputs.
// `seed` keys the random ops (the backward reads the masks the forward
// saved). `origins[i]`: where the runtime sees inputs[i]'s storage begin (see
// Borrow; empty: at its start). Throws std::runtime_error with the status
// when the runtime fails.
std::vector<at::Tensor> RunTraining(
    const std::shared_ptr<const TrainingStep>& step,
    const std::vector<at::Tensor>& inputs,
    const std::vector<at::Tensor>& differentiable, uint64_t seed,
    const std::vector<int64_t>& origins);

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_PYTHON_NATIVE_TRAINING_FUNCTION_H_
