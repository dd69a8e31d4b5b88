// GraphExecutor: runs a validated graph node by node with the runtime's
// kernels. It runs functional graphs (what the reference backend compiles)
// and original ones alike: an in-place op computes its functional
// counterpart and writes the result into `self`'s memory, as eager does.
// Thread-safety: Run is const and may be called from several threads.
// Planned memory is kept between Runs and reused.
#ifndef AOTCACHE_CORE_RUNTIME_GRAPH_EXECUTOR_H_
#define AOTCACHE_CORE_RUNTIME_GRAPH_EXECUTOR_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "aotcache/v1/artifact.pb.h"
#include "aotcache/v1/graph.pb.h"
#include "core/graph/resolved_graph.h"
#include "core/runtime/kernel.h"
#include "core/runtime/tensor.h"

namespace aotcache {

class GraphExecutor {
 public:
  // Returns InvalidArgument if the graph is invalid or uses an op without a
  // kernel.
  static absl::StatusOr<std::unique_ptr<GraphExecutor>> Create(v1::Graph graph);
  // The same, computing results into the program's planned buffers.
  static absl::StatusOr<std::unique_ptr<GraphExecutor>> Create(
      const v1::ReferenceProgram& program);

  // A native backend kernel: computes the values `outputs` (results of
  // the group `nodes`) from the values `inputs` (contiguous, of the first
  // output's numel and dtype) in place of the group, whose other results
  // nothing else reads. It runs at the turn of the last of `nodes`: the
  // inputs are made before it, the outputs read after it. (An elementwise
  // group ends with the node whose results it outputs; a kernel of its own
  // kind ends with its node, after the nodes it absorbs, such as the ReLU
  // after a batch norm.)
  struct FusedKernel {
    std::vector<int> nodes;
    std::vector<int> inputs;
    std::vector<int> outputs;
    // Generated for the operands' layouts (a matrix product), not
    // elementwise over contiguous operands.
    bool any_layout = false;
    // n: the first output's numel.
    void (*fn)(const void* const* inputs, void* const* outputs,
               int64_t n) = nullptr;
  };
  // `program` with the groups of `fused` run by their kernels.
  // InvalidArgument for a group that does not fit the graph.
  static absl::StatusOr<std::unique_ptr<GraphExecutor>> Create(
      const v1::ReferenceProgram& program, std::vector<FusedKernel> fused);

  // `inputs`: one per graph input, laid out exactly as the graph's input
  // metas say (InvalidArgument otherwise). Random ops draw from Philox keyed
  // by `seed`, each node a stream of its own (philox.h).
  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs,
                                          uint64_t seed = 0) const;

 private:
  using Arenas = std::vector<AlignedMemory>;  // One per slot.

  GraphExecutor() = default;
  // Planned memory for one Run: a spare set, or a new one.
  Arenas TakeArenas() const;

  // Constant after construction. resolved_ points into graph_, which is
  // heap-allocated so the pointer survives moves of the executor.
  std::unique_ptr<v1::Graph> graph_;
  ResolvedGraph resolved_;
  std::vector<Kernel> kernels_;   // Per resolved node.
  std::vector<bool> write_back_;  // Per node: in place via its counterpart.
  // Per node: the metas its kernel computes its results in.
  std::vector<std::vector<Meta>> result_metas_;
  // Per node, per argument: a number in a tensor slot, as a 0-dim float64
  // tensor (read only, shared by every Run); undefined for the others.
  std::vector<std::vector<Tensor>> number_args_;
  std::vector<Tensor> constants_;
  // The buffer plan (empty: every result gets memory of its own).
  std::vector<int> result_slot_;  // Per result, flat over nodes.
  std::vector<int64_t> slot_bytes_;
  // Arenas of finished Runs, reused so that their pages stay mapped: at
  // most one set per Run that was ever in flight at once.
  mutable absl::Mutex arenas_mu_;
  mutable std::vector<Arenas> spare_arenas_ ABSL_GUARDED_BY(arenas_mu_);
  // Per node: kNotFused, kInsideFused (not run), or the fused kernel whose
  // output it computes.
  static constexpr int kNotFused = -1;
  static constexpr int kInsideFused = -2;
  std::vector<int> fused_role_;
  std::vector<FusedKernel> fused_;
  // Per fused kernel, per output: its index in result_slot_.
  std::vector<std::vector<int>> fused_output_results_;
};

}  // namespace aotcache

#endif  // AOTCACHE_CORE_RUNTIME_GRAPH_EXECUTOR_H_
