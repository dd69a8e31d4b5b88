// CompiledFunction: runs a function's artifacts with eager's semantics.
// Forward runs the forward (or inference) artifact and applies the
// epilogue of SEMANTICS.md §5 to the caller's tensors: the new values of
// mutated inputs are written into the caller's memory (data) or the
// caller's tensor takes the new layout (metadata), and outputs that alias
// inputs, intermediates or other outputs are regenerated as views of their
// base (same memory). Backward runs the backward artifact on the saved
// values and the tangents (any layout: they are coerced to the layout the
// backward was traced with) and returns, per input, a gradient or none.
// Artifacts load from their bytes alone; a backward whose calling
// convention does not pair with the forward's is refused.
// Thread-safety: Forward and Backward are const and thread-compatible.
#ifndef AOTCACHE_CORE_RUNTIME_COMPILED_FUNCTION_H_
#define AOTCACHE_CORE_RUNTIME_COMPILED_FUNCTION_H_

#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "aotcache/v1/artifact.pb.h"
#include "core/runtime/graph_executor.h"
#include "core/runtime/tensor.h"

namespace aotcache {

class CompiledFunction {
 public:
  struct ForwardResult {
    std::vector<Tensor> outputs;  // The user outputs, aliasing as in eager.
    std::vector<Tensor> saved;    // For Backward (training mode).
    // Intermediate bases (training mode: the autograd epilogue needs them).
    std::vector<Tensor> intermediate_bases;
  };

  // InvalidArgument for an artifact that does not parse or is not a forward
  // or inference artifact of the reference or native backend;
  // FailedPrecondition for native kernels built for a CPU level this
  // machine lacks (HostTarget).
  static absl::StatusOr<std::unique_ptr<CompiledFunction>> Load(
      const v1::Artifact& forward, const v1::FunctionMetadata& metadata);

  // A new function that shares this one's loaded forward, without its
  // backward: an artifact is loaded once however many functions run it.
  std::unique_ptr<CompiledFunction> ShareForward() const;

  // FailedPrecondition when `backward` does not pair with the forward or
  // needs a CPU level this machine lacks.
  absl::Status AttachBackward(const v1::Artifact& backward);
  bool has_backward() const { return backward_ != nullptr; }

  // `inputs` are the caller's tensors; mutated ones are written in place,
  // and an input whose metadata the function changes is replaced by the
  // tensor with the new layout (same memory).
  // `seed` keys the random ops, if any (pass a fresh one per call).
  absl::StatusOr<ForwardResult> Forward(std::vector<Tensor>* inputs,
                                        uint64_t seed = 0) const;

  struct Gradients {
    // Per input: its gradient, or none when no gradient reaches it.
    std::vector<std::optional<Tensor>> inputs;
    // Per synthetic base (mutated inputs sharing a storage, whose gradient
    // is their storage's): a 1-D gradient over the whole storage, or none.
    std::vector<std::optional<Tensor>> synthetic_bases;
  };

  // The forward artifact's arguments for `inputs`: the inputs, except that
  // mutated inputs sharing a storage are replaced by one synthetic base (a
  // 1-D view of their whole storage).
  // InvalidArgument when `inputs` do not fit the function (their count, a
  // storage smaller than the synthetic base it is compiled for).
  absl::StatusOr<std::vector<Tensor>> ArtifactArgs(
      const std::vector<Tensor>& inputs) const;

  // For callers that apply the epilogue themselves (the Python integration
  // does, with torch's own in-place ops so version counters move): the
  // forward artifact's raw outputs, in its calling convention's order --
  // new values of mutated inputs, user outputs, intermediate bases, saved
  // values -- with the caller's tensors untouched. `args` are the artifact's
  // inputs (a synthetic base in place of the inputs it merges).
  // `seed` keys the random ops (a fresh one per call; the backward reads
  // the masks the forward saved).
  absl::StatusOr<std::vector<Tensor>> RunForwardArtifact(
      const std::vector<Tensor>& args, uint64_t seed = 0) const {
    return forward_->Run(args, seed);
  }
  const v1::FunctionMetadata& metadata() const { return *metadata_; }
  const v1::Artifact& forward_artifact() const { return *forward_artifact_; }
  const v1::CallingConvention& forward_convention() const {
    return forward_artifact_->calling_convention();
  }

  // `tangents`: one per TangentInfo of the metadata, in its order.
  absl::StatusOr<Gradients> Backward(const std::vector<Tensor>& saved,
                                     const std::vector<Tensor>& tangents) const;

 private:
  CompiledFunction() = default;

  // Shared by the functions ShareForward makes: immutable once loaded.
  std::shared_ptr<const v1::Artifact> forward_artifact_;
  std::shared_ptr<const v1::FunctionMetadata> metadata_;
  std::shared_ptr<const GraphExecutor> forward_;
  std::unique_ptr<GraphExecutor> backward_;
  v1::CallingConvention backward_convention_;
};

}  // namespace aotcache

#endif  // AOTCACHE_CORE_RUNTIME_COMPILED_FUNCTION_H_
