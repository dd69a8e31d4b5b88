// The ops aotcache understands: each with its ATen schema (types, defaults,
// alias annotations), its shape inference, which arguments are
// differentiable, what it does to memory, and whether its results are
// random. Graphs using any other op are refused by validation.
// Thread-safety: the registry is built once, on first use, and immutable.
#ifndef AOTCACHE_CORE_GRAPH_OP_REGISTRY_H_
#define AOTCACHE_CORE_GRAPH_OP_REGISTRY_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "core/graph/decompositions.h"
#include "core/graph/op_schema.h"
#include "core/graph/shape_inference.h"

namespace aotcache {

// What an op does to memory, as autograd and functionalization see it.
enum class OpEffect {
  kFunctional,       // Fresh results.
  kView,             // Result 0 is a differentiable view of `self`.
  kDetach,           // Shares self's storage; no autograd history.
  kUnsafeView,       // Shares self's storage; autograd sees a fresh tensor.
  kInPlace,          // Writes self's data and returns self.
  kInPlaceMetadata,  // Changes self's shape/stride/offset and returns self.
};

// Whether an op's results are random: drawn from the run's seed (the
// runtime's Philox), never recomputed by the backward.
enum class Randomness { kDeterministic, kRandom };

struct OpInfo {
  OpSchema schema;
  std::string qualified_name;  // "aten.add_.Tensor"
  InferFn infer;
  OpEffect effect;
  Randomness randomness;
  // False for ops no gradient flows through (comparisons, factories, *_like).
  bool differentiable;
  // Tensor arguments no gradient flows into (where's condition).
  std::vector<std::string> nondifferentiable_args;
  // Per result; bool and integral results never require grad either way.
  std::vector<bool> differentiable_results;
  // In-place and in-place-metadata ops: the out-of-place op with the same
  // arguments ("aten.add.Tensor" for add_); the functional graph uses it.
  std::string functional_counterpart;
  // resize_: an in-place op whose functional form gives self a new shape
  // (its storage may grow): a metadata mutation, which writes no element
  // self keeps.
  bool resizes_self = false;
  // Ops validation rewrites into others (decompositions.h): set for them
  // only, and `infer` is then null. No resolved node has such an op.
  DecomposeFn decompose = nullptr;

  bool IsArgDifferentiable(int arg) const;
};

class OpRegistry {
 public:
  static const OpRegistry& Get();

  // Returns nullptr when the op is not supported.
  const OpInfo* Find(absl::string_view qualified_name) const;
  const std::vector<OpInfo>& ops() const { return ops_; }

 private:
  OpRegistry();
  void Add(OpInfo info);

  std::vector<OpInfo> ops_;
  absl::flat_hash_map<std::string, int> by_name_;
};

// The name a multi-output result is read with.
bool IsGetItem(absl::string_view op);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_GRAPH_OP_REGISTRY_H_
