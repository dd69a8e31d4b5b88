// Shape, stride and dtype inference for the ops of the registry, one function
// per family of ops. Each returns the metas of the op's results, or
// InvalidArgument naming the argument at fault (the caller adds the node).
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_GRAPH_SHAPE_INFERENCE_H_
#define AOTCACHE_CORE_GRAPH_SHAPE_INFERENCE_H_

#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "core/graph/op_schema.h"
#include "core/graph/tensor_meta.h"

namespace aotcache {

// What an inference function sees of one node.
class InferContext {
 public:
  // `meta_of(id)` is the meta of value `id`; it must outlive the context.
  InferContext(const OpSchema& schema, const std::vector<BoundArg>& args,
               absl::FunctionRef<const Meta&(int)> meta_of)
      : schema_(schema), args_(args), meta_of_(meta_of) {}

  const OpSchema& schema() const { return schema_; }
  const BoundArg& arg(int i) const { return args_[i]; }
  int num_args() const { return static_cast<int>(args_.size()); }
  // The meta of tensor argument `i` (which must be a tensor).
  const Meta& tensor(int i) const { return meta_of_(args_[i].values[0]); }
  const Meta& value(int id) const { return meta_of_(id); }

 private:
  const OpSchema& schema_;
  const std::vector<BoundArg>& args_;
  absl::FunctionRef<const Meta&(int)> meta_of_;
};

using InferFn = absl::StatusOr<std::vector<Meta>> (*)(const InferContext&);

namespace infer {
// Broadcasting ops over every tensor-or-number argument, with torch's type
// promotion (dimensioned tensors > zero-dim tensors > Python numbers).
absl::StatusOr<std::vector<Meta>> Elementwise(const InferContext& ctx);
// The same, but integral inputs promote to float32 (div, exp, sin, ...).
absl::StatusOr<std::vector<Meta>> ElementwiseFloat(const InferContext& ctx);
// Comparisons: broadcast, result bool.
absl::StatusOr<std::vector<Meta>> Comparison(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> Where(const InferContext& ctx);
// In-place ops: the result is `self`; the other operands must broadcast to
// self's shape and their promoted dtype must cast to self's dtype.
absl::StatusOr<std::vector<Meta>> InPlace(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> SameAsSelf(const InferContext& ctx);
// A fresh tensor shaped like self, in self's layout where it is dense
// (torch's preserve_format); Clone honours its memory_format argument.
absl::StatusOr<std::vector<Meta>> Fresh(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> Clone(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> Like(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> ToCopy(const InferContext& ctx);
// resize (fresh, contiguous) and resize_ (self's offset kept).
absl::StatusOr<std::vector<Meta>> Resize(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> ResizeInPlace(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> SumAll(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> SumDim(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> MeanAll(const InferContext& ctx);
// max(self): the largest element (NaN if any is), 0-d.
absl::StatusOr<std::vector<Meta>> MaxAll(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> MeanDim(const InferContext& ctx);
// var.correction(self, dim?, *, correction?, keepdim).
absl::StatusOr<std::vector<Meta>> VarCorrection(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> Amax(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> Softmax(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> LayerNorm(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> MseLoss(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> Mm(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> Addmm(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> Bmm(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> Dot(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> Cat(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> Dropout(const InferContext& ctx);
// Backward ops.
absl::StatusOr<std::vector<Meta>> SameAsFirstFresh(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> LayerNormBackward(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> MseLossBackward(const InferContext& ctx);
// Views: the result shares self's storage; strides and offset are exact.
absl::StatusOr<std::vector<Meta>> View(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> ReshapeAlias(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> UnsafeView(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> T(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> Transpose(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> Permute(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> Expand(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> Unsqueeze(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> SqueezeDim(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> Slice(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> Select(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> AsStrided(const InferContext& ctx);
// Scatters: the result has self's shape; src must match the scattered view.
absl::StatusOr<std::vector<Meta>> SelectScatter(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> SliceScatter(const InferContext& ctx);
absl::StatusOr<std::vector<Meta>> AsStridedScatter(const InferContext& ctx);
}  // namespace infer

}  // namespace aotcache

#endif  // AOTCACHE_CORE_GRAPH_SHAPE_INFERENCE_H_
