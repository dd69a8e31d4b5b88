#include "core/analysis/autograd_replay.h"

#include "absl/strings/str_cat.h"
#include "core/graph/bind_arguments.h"

namespace aotcache {
namespace {

// The ops whose results autograd marks as views of a multi-output node
// (CreationMeta::MULTI_OUTPUT_NODE); tensor_split is made of slices and
// unsafe_split's results are no views to autograd.
bool IsMultiOutputViewOp(absl::string_view op) {
  return op == "aten.unbind.int" || op == "aten.split.Tensor" ||
         op == "aten.split_with_sizes.default" || op == "aten.chunk.default";
}

class Replayer {
 public:
  explicit Replayer(const ResolvedGraph& graph) : graph_(graph) {}

  absl::StatusOr<Replay> Run() {
    r_.value_object.assign(graph_.values.size(), -1);
    r_.storages.resize(graph_.storage_size.size());
    for (StorageState& s : r_.storages) s.is_input = true;
    AddInputs();
    for (int c = 0; c < graph_.num_constants(); ++c) {
      r_.value_object[graph_.ConstantValue(c)] =
          NewFreshObject(graph_.values[graph_.ConstantValue(c)].meta);
    }
    for (const ResolvedNode& node : graph_.nodes) {
      absl::Status st = Step(node);
      if (!st.ok()) return st;
    }
    return std::move(r_);
  }

 private:
  void AddInputs() {
    // Storages shared by several inputs get a pseudo base object that the
    // members are views of (except leaves that require grad: never views).
    std::vector<int> members(graph_.storage_size.size(), 0);
    for (int s : graph_.input_storage) ++members[s];
    std::vector<int> shared_base(graph_.storage_size.size(), -1);
    for (int i = 0; i < graph_.num_inputs(); ++i) {
      const v1::TensorMeta& meta = graph_.graph->inputs(i).meta();
      int storage = graph_.input_storage[i];
      TensorObject obj;
      obj.storage = storage;
      obj.input = i;
      obj.origin_input = i;
      obj.meta = graph_.values[i].meta;
      bool leaf_requiring_grad = meta.is_leaf() && meta.requires_grad();
      obj.requires_grad_flag = leaf_requiring_grad;
      obj.has_grad_fn = !meta.is_leaf();
      if (members[storage] > 1 && !leaf_requiring_grad) {
        if (shared_base[storage] < 0) {
          TensorObject base;
          base.storage = storage;
          // The whole storage, 1-D: what a synthetic base is.
          base.meta = ContiguousMeta({graph_.storage_size[storage]},
                                     graph_.values[i].meta.dtype);
          shared_base[storage] = Add(std::move(base));
        }
        obj.view_base = shared_base[storage];
        // The caller's view may require grad on its own (a non-leaf).
      }
      int id = Add(std::move(obj));
      r_.input_object.push_back(id);
      r_.value_object[i] = id;
    }
  }

  int Add(TensorObject obj) {
    r_.objects.push_back(std::move(obj));
    return static_cast<int>(r_.objects.size()) - 1;
  }

  int NewFreshObject(const Meta& meta) {
    TensorObject obj;
    obj.storage = static_cast<int>(r_.storages.size());
    r_.storages.emplace_back();
    obj.meta = meta;
    return Add(std::move(obj));
  }

  // Whether any argument that gradients flow into requires grad.
  bool AnyDifferentiableArgRequiresGrad(const ResolvedNode& node) const {
    for (size_t k = 0; k < node.args.size(); ++k) {
      if (!node.op->IsArgDifferentiable(static_cast<int>(k))) continue;
      for (int v : node.args[k].values) {
        if (IsFloating(graph_.values[v].meta.dtype) &&
            r_.RequiresGrad(r_.value_object[v])) {
          return true;
        }
      }
    }
    return false;
  }

  // resize_: eager refuses it on a tensor that requires grad; aotcache
  // supports it on a tensor that no other tensor of the function shares
  // memory with (a storage that grows moves every view of it).
  absl::Status CheckResize(const ResolvedNode& node, int self) const {
    if (r_.RequiresGrad(self)) {
      return Refuse(node, "cannot resize variables that require grad");
    }
    const TensorObject& obj = r_.objects[self];
    for (size_t o = 0; o < r_.objects.size(); ++o) {
      if (static_cast<int>(o) != self && r_.objects[o].storage == obj.storage) {
        const v1::Node& proto = graph_.proto(node);
        return absl::InvalidArgumentError(absl::StrCat(
            "node ", Quoted(proto.name()), " (nodes[", node.proto_index, "], ",
            node.op->qualified_name,
            "): resize_ of a tensor that shares its memory with another "
            "tensor of the function (a view, an alias, an input passed "
            "twice) is not supported"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status Refuse(const ResolvedNode& node, absl::string_view why) const {
    const v1::Node& proto = graph_.proto(node);
    return absl::InvalidArgumentError(absl::StrCat(
        "node ", Quoted(proto.name()), " (nodes[", node.proto_index, "], ",
        node.op->qualified_name, "): eager PyTorch refuses this: ", why));
  }

  // autograd's check_inplace, and ATen's refusal to write memory that
  // several elements share.
  absl::Status CheckInPlace(const ResolvedNode& node, int self,
                            bool result_requires_grad) const {
    const TensorObject& obj = r_.objects[self];
    if (node.op->effect == OpEffect::kInPlace) {
      for (int64_t d = 0; d < obj.meta.dim(); ++d) {
        if (obj.meta.stride[d] == 0 && obj.meta.shape[d] > 1) {
          return Refuse(node,
                        "more than one element of the written-to tensor "
                        "refers to a single memory location");
        }
      }
    }
    // ATen refuses an in-place op reading memory it partially writes.
    for (size_t k = 1; k < node.args.size(); ++k) {
      for (int v : node.args[k].values) {
        const TensorObject& other = r_.objects[r_.value_object[v]];
        if (other.storage != obj.storage || other.meta == obj.meta) continue;
        int64_t a0 = obj.meta.offset, a1 = obj.meta.StorageExtent();
        int64_t b0 = other.meta.offset, b1 = other.meta.StorageExtent();
        bool intersect = a0 < b1 && b0 < a1 && obj.meta.numel() > 0 &&
                         other.meta.numel() > 0;
        if (intersect && obj.meta.IsContiguous() && other.meta.IsContiguous()) {
          return Refuse(node,
                        "some elements of the input tensor and the written-to "
                        "tensor refer to a single memory location");
        }
      }
    }
    if (!node.grad_enabled || !result_requires_grad) return absl::OkStatus();
    if (obj.view_base >= 0) {
      if (obj.view_created_in_no_grad) {
        return Refuse(node,
                      "a view created in no_grad mode is modified in place "
                      "with grad mode enabled");
      }
      if (obj.multi_output_view) {
        return Refuse(node,
                      "a view that is the output of a function returning "
                      "multiple views (unbind, split, chunk) is modified in "
                      "place");
      }
      if (r_.RequiresGrad(self) && r_.IsLeaf(obj.view_base) &&
          r_.objects[obj.view_base].requires_grad_flag) {
        return Refuse(node,
                      "a view of a leaf Variable that requires grad is being "
                      "used in an in-place operation");
      }
    }
    if (r_.RequiresGrad(self) && r_.IsLeaf(self)) {
      return Refuse(node,
                    "a leaf Variable that requires grad is being used in an "
                    "in-place operation");
    }
    return absl::OkStatus();
  }

  absl::Status Step(const ResolvedNode& node) {
    const OpInfo& op = *node.op;
    bool differentiable_input = AnyDifferentiableArgRequiresGrad(node);
    if (op.effect == OpEffect::kFunctional) {
      for (size_t r = 0; r < node.results.size(); ++r) {
        int v = node.results[r];
        int id = NewFreshObject(graph_.values[v].meta);
        r_.objects[id].has_grad_fn = node.grad_enabled &&
                                     differentiable_input &&
                                     op.differentiable_results[r] &&
                                     IsFloating(graph_.values[v].meta.dtype);
        r_.value_object[v] = id;
      }
      return absl::OkStatus();
    }
    int self = r_.value_object[node.args[0].values[0]];
    int result_value = node.results[0];
    const TensorObject& base = r_.objects[self];
    switch (op.effect) {
      case OpEffect::kView: {
        TensorObject view;
        view.storage = base.storage;
        view.view_base = base.view_base >= 0 ? base.view_base : self;
        view.view_created_in_no_grad =
            !node.grad_enabled ||
            (base.view_base >= 0 && base.view_created_in_no_grad);
        view.multi_output_view = base.multi_output_view ||
                                 IsMultiOutputViewOp(graph_.proto(node).op());
        view.has_grad_fn = node.grad_enabled && r_.RequiresGrad(self);
        view.origin_input = base.origin_input;
        view.meta = graph_.values[result_value].meta;
        r_.value_object[result_value] = Add(std::move(view));
        return absl::OkStatus();
      }
      case OpEffect::kDetach:
      case OpEffect::kUnsafeView: {
        TensorObject alias;
        alias.storage = base.storage;
        alias.origin_input = base.origin_input;
        alias.has_grad_fn = op.effect == OpEffect::kUnsafeView &&
                            node.grad_enabled && r_.RequiresGrad(self);
        alias.meta = graph_.values[result_value].meta;
        r_.value_object[result_value] = Add(std::move(alias));
        return absl::OkStatus();
      }
      case OpEffect::kInPlace:
      case OpEffect::kInPlaceMetadata: {
        bool result_requires_grad = differentiable_input;
        absl::Status st = op.resizes_self
                              ? CheckResize(node, self)
                              : CheckInPlace(node, self, result_requires_grad);
        if (!st.ok()) return st;
        TensorObject& obj = r_.objects[self];
        // resize_ changes no element self keeps: the ones it adds are
        // uninitialized in eager.
        if (op.effect == OpEffect::kInPlace && !op.resizes_self) {
          StorageState& storage = r_.storages[obj.storage];
          storage.data_mutated = true;
          storage.mutated_with_grad_enabled |= node.grad_enabled;
        }
        if (op.resizes_self || op.effect == OpEffect::kInPlaceMetadata) {
          obj.metadata_mutated = true;
          obj.meta = graph_.values[result_value].meta;
        }
        if (node.grad_enabled && result_requires_grad) {
          obj.has_grad_fn = true;
          // CopySlices: the base's history is rebased too.
          if (obj.view_base >= 0) r_.objects[obj.view_base].has_grad_fn = true;
        }
        r_.value_object[result_value] = self;
        return absl::OkStatus();
      }
      case OpEffect::kFunctional:
        break;
    }
    return absl::OkStatus();
  }

  const ResolvedGraph& graph_;
  Replay r_;
};

}  // namespace

bool Replay::RequiresGrad(int object) const {
  const TensorObject& obj = objects[object];
  if (obj.requires_grad_flag || obj.has_grad_fn) return true;
  return obj.view_base >= 0 && RequiresGrad(obj.view_base);
}

bool Replay::IsLeaf(int object) const { return !objects[object].has_grad_fn; }

absl::StatusOr<Replay> ReplayAutograd(const ResolvedGraph& graph) {
  return Replayer(graph).Run();
}

}  // namespace aotcache
