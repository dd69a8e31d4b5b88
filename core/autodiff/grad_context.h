// GradContext: what a derivative rule sees of one recorded op and the
// helpers it emits backward ops with. Forward values a rule reads are saved
// for backward (they become backward-graph inputs); gradients it sets are
// reduced to the input's shape (undoing broadcasting) and cast to its dtype.
// Emission errors are kept: a rule does not check each step, the engine
// checks status() after the rule ran.
// Thread-safety: not thread-safe; one context per rule invocation.
#ifndef AOTCACHE_CORE_AUTODIFF_GRAD_CONTEXT_H_
#define AOTCACHE_CORE_AUTODIFF_GRAD_CONTEXT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "core/analysis/functionalize.h"
#include "core/analysis/graph_builder.h"

namespace aotcache {

// Which forward values the backward recomputes instead of saving.
enum class Recompute {
  kNothing,  // Save every forward value the backward reads.
  // Recompute values of cheap ops (pointwise, views, factories, softmax,
  // layer norm) from the values they need, when that saves no more bytes
  // than saving the value itself: the min-cut partitioner's aim, greedily.
  kCheapOps,
};

// Forward values the backward reads: saved (a backward input, returned by
// the forward), or recomputed in the backward from saved ones.
class SavedValues {
 public:
  SavedValues(GraphBuilder* forward, GraphBuilder* backward, Recompute policy)
      : forward_(forward), backward_(backward), policy_(policy) {}

  // The backward-graph value holding forward value `forward_local`.
  absl::StatusOr<int> Get(int forward_local);
  // Saved values, in the order first saved.
  const std::vector<int>& forward_locals() const { return order_; }
  int64_t saved_bytes() const { return saved_bytes_; }

 private:
  int Save(int forward_local);
  bool IsCheap(int forward_local) const;
  // The values recomputing `local` needs that are not saved yet, or false if
  // it cannot be recomputed within `depth`.
  bool Leaves(int local, int depth, std::vector<int>* leaves) const;
  absl::StatusOr<int> RecomputeValue(int forward_local);

  GraphBuilder* forward_;
  GraphBuilder* backward_;
  Recompute policy_;
  absl::flat_hash_map<int, int> backward_of_;
  std::vector<int> order_;
  int64_t saved_bytes_ = 0;
};

class GradContext {
 public:
  GradContext(const TapeEntry& entry, const GraphBuilder& forward,
              GraphBuilder* backward, SavedValues* saved,
              std::vector<std::optional<int>> grad_outputs,
              std::vector<bool> needs);

  const BoundArg& arg(int k) const { return entry_.node->args[k]; }
  // Whether argument k is a Python number standing for a tensor.
  bool IsNumber(int k) const { return arg(k).is_number(); }
  double Number(int k) const { return arg(k).AsDouble(); }
  // A tensor argument as an operand of an emitted op: its saved value, or
  // the number itself.
  BoundArg Operand(int k);

  int Input(int k, int element = 0);  // Saved forward value of an argument.
  int Result(int r = 0);              // Saved forward result.
  const Meta& InputMeta(int k, int element = 0) const;
  const Meta& ResultMeta(int r = 0) const;
  int num_elements(int k) const {
    return static_cast<int>(entry_.arg_values[k].size());
  }

  std::optional<int> grad(int r = 0) const { return grad_outputs_[r]; }
  bool needs(int k) const { return needs_[k]; }
  const Meta& meta(int backward_local) const {
    return backward_->meta(backward_local);
  }

  // Emits `op(args)`; returns its (first) result, or -1 after an error.
  int Op(absl::string_view op, std::vector<BoundArg> args);
  std::vector<int> OpN(absl::string_view op, std::vector<BoundArg> args);
  int Zeros(const Meta& like);  // zeros of like's shape and dtype
  int Contiguous(int x);        // x, or a contiguous clone
  int SumToSize(int g, const std::vector<int64_t>& shape);

  // Sets the gradient of argument k (element of a tensor list).
  void SetGrad(int k, int value, int element = 0);
  // Reports a case the rule does not support.
  void Unsupported(absl::string_view why);

  const absl::Status& status() const { return status_; }
  // Per argument, per element: the gradient, or none.
  const std::vector<std::vector<std::optional<int>>>& grads() const {
    return grads_;
  }

 private:
  int Saved(int forward_local);
  // Whether argument k has a tensor at `element`; else records
  // InvalidArgument (a number where the rule needs a tensor) and returns
  // false.
  bool IsTensorElement(int k, int element) const;

  const TapeEntry& entry_;
  const GraphBuilder& forward_;
  GraphBuilder* backward_;
  SavedValues* saved_;
  std::vector<std::optional<int>> grad_outputs_;
  std::vector<bool> needs_;
  std::vector<std::vector<std::optional<int>>> grads_;
  // Mutable: const accessors record a rule's misuse too.
  mutable absl::Status status_;
};

}  // namespace aotcache

#endif  // AOTCACHE_CORE_AUTODIFF_GRAD_CONTEXT_H_
