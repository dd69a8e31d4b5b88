#include "core/analysis/functionalize.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/analysis/graph_builder.h"
#include "core/analysis/view_and_mutation.h"
#include "core/analysis/view_chain.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

// Where an object of the original program stands in the functional graph.
struct ObjectState {
  std::vector<ViewStep> chain;  // From its storage's root value.
  int value = -1;               // Local value id, valid at `generation`.
  int generation = 0;
};

struct StorageRoot {
  int value = -1;  // Local value id of the storage's current contents.
  int generation = 0;
  int object = -1;  // The object whose value the root is; -1: synthetic base.
};

const OpInfo& Op(absl::string_view name) {
  return *OpRegistry::Get().Find(name);
}

class Functionalizer {
 public:
  Functionalizer(const ResolvedGraph& graph, const Replay& replay,
                 const v1::ViewAndMutationData& vmd)
      : graph_(graph), replay_(replay), vmd_(vmd), out_(*graph.graph) {}

  absl::StatusOr<FunctionalProgram> Run() {
    objects_.resize(replay_.objects.size());
    roots_.resize(replay_.storages.size());
    AddInputs();
    for (int c = 0; c < graph_.num_constants(); ++c) {
      *out_.graph().add_constants() = graph_.graph->constants(c);
      int local = out_.NewValue(graph_.graph->constants(c).name(),
                                graph_.values[graph_.ConstantValue(c)].meta);
      int obj = replay_.value_object[graph_.ConstantValue(c)];
      SetFresh(obj, local);
    }
    for (const ResolvedNode& node : graph_.nodes) {
      AOTCACHE_RETURN_IF_ERROR(Step(node));
    }
    AOTCACHE_RETURN_IF_ERROR(AddOutputs());
    FunctionalProgram program;
    program.forward = std::make_unique<GraphBuilder>(std::move(out_));
    program.tape = std::move(tape_);
    program.input_values = std::move(input_local_);
    return program;
  }

 private:
  // --- Objects and storages ----------------------------------------------

  void SetFresh(int obj, int local) {
    ObjectState& o = objects_[obj];
    o.value = local;
    o.generation = 0;
    StorageRoot& root = roots_[replay_.objects[obj].storage];
    root.value = local;
    root.object = obj;
  }

  void AddInputs() {
    std::vector<int> synthetic_of_storage(graph_.storage_size.size(), -1);
    for (int b = 0; b < vmd_.synthetic_bases_size(); ++b) {
      synthetic_of_storage[vmd_.synthetic_bases(b).storage()] = b;
    }
    for (int i = 0; i < graph_.num_inputs(); ++i) {
      const v1::Input& in = graph_.graph->inputs(i);
      int obj = replay_.input_object[i];
      int storage = graph_.input_storage[i];
      int synthetic = synthetic_of_storage[storage];
      if (synthetic < 0) {
        *out_.graph().add_inputs() = in;
        input_local_.push_back(out_.NewValue(in.name(), graph_.values[i].meta));
        SetFresh(obj, input_local_.back());
        continue;
      }
      input_local_.push_back(-1);  // Members are rebuilt from the base.
      const v1::SyntheticBase& base = vmd_.synthetic_bases(synthetic);
      StorageRoot& root = roots_[storage];
      if (root.value < 0) {
        v1::Input* added = out_.graph().add_inputs();
        added->set_name(
            out_.FreshName(absl::StrCat("synthetic_base_", storage)));
        Meta meta = ContiguousMeta({base.size()}, base.dtype());
        *added->mutable_meta() = MetaToProto(meta);
        bool requires_grad = false;
        for (int m : base.inputs()) {
          requires_grad |= graph_.graph->inputs(m).meta().requires_grad();
        }
        added->mutable_meta()->set_requires_grad(requires_grad);
        added->mutable_meta()->set_is_leaf(true);
        root.value = out_.NewValue(added->name(), meta);
        // The replay's pseudo base of the storage (autograd's base of the
        // members), when the member is a view of it.
        root.object = replay_.objects[obj].view_base;
      }
      const Meta& m = graph_.values[i].meta;
      ViewStep step{
          &Op("aten.as_strided.default"),
          {BoundArg(), IntsArg(m.shape), IntsArg(m.stride), IntArg(m.offset)}};
      objects_[obj].chain.push_back(std::move(step));
      objects_[obj].generation = -1;  // Built on first read.
    }
  }

  // The up-to-date local value of `obj`, regenerated from its storage's
  // current contents if the storage was written since.
  absl::StatusOr<int> Read(int obj, bool grad_enabled) {
    ObjectState& o = objects_[obj];
    const StorageRoot& root = roots_[replay_.objects[obj].storage];
    if (o.generation == root.generation && o.value >= 0) return o.value;
    AOTCACHE_ASSIGN_OR_RETURN(
        int local, ApplyChain(out_, o.chain, root.value, grad_enabled));
    o.value = local;
    o.generation = root.generation;
    return local;
  }

  // Makes `updated` the new value of `obj` and of its whole storage.
  absl::Status Write(int obj, int updated, bool grad_enabled) {
    ObjectState& o = objects_[obj];
    StorageRoot& root = roots_[replay_.objects[obj].storage];
    AOTCACHE_ASSIGN_OR_RETURN(
        int value,
        WriteThroughChain(out_, o.chain, root.value, updated, grad_enabled));
    root.value = value;
    ++root.generation;
    o.value = updated;
    o.generation = root.generation;
    return absl::OkStatus();
  }

  // --- The original program ------------------------------------------------

  absl::StatusOr<std::vector<BoundArg>> ReadArgs(const ResolvedNode& node) {
    std::vector<BoundArg> args = node.args;
    for (BoundArg& a : args) {
      for (int& v : a.values) {
        AOTCACHE_ASSIGN_OR_RETURN(
            v, Read(replay_.value_object[v], node.grad_enabled));
      }
    }
    return args;
  }

  absl::Status Step(const ResolvedNode& node) {
    const OpInfo& op = *node.op;
    const std::string& name = graph_.proto(node).name();
    AOTCACHE_ASSIGN_OR_RETURN(std::vector<BoundArg> args, ReadArgs(node));
    TapeEntry& entry = tape_.emplace_back();
    entry.node = &node;
    for (const BoundArg& a : args) entry.arg_values.push_back(a.values);
    if (op.effect == OpEffect::kFunctional) {
      AOTCACHE_ASSIGN_OR_RETURN(
          std::vector<int> results,
          out_.Emit(op, std::move(args), node.grad_enabled, name));
      for (size_t r = 0; r < results.size(); ++r) {
        SetFresh(replay_.value_object[node.results[r]], results[r]);
      }
      entry.result_values = std::move(results);
      return absl::OkStatus();
    }
    int self = replay_.value_object[node.args[0].values[0]];
    int result = replay_.value_object[node.results[0]];
    entry.root_object = roots_[replay_.objects[self].storage].object;
    if (entry.root_object >= 0) {
      entry.root_chain_length =
          static_cast<int>(objects_[entry.root_object].chain.size());
    }
    switch (op.effect) {
      case OpEffect::kView:
      case OpEffect::kDetach:
      case OpEffect::kUnsafeView: {
        ViewStep step{&op, node.args};
        step.args[0] = BoundArg();
        AOTCACHE_ASSIGN_OR_RETURN(
            int local,
            out_.EmitOne(op, std::move(args), node.grad_enabled, name));
        ObjectState& view = objects_[result];
        view.chain = objects_[self].chain;
        view.chain.push_back(std::move(step));
        view.value = local;
        view.generation = roots_[replay_.objects[result].storage].generation;
        entry.result_values = {local};
        entry.chain = view.chain;
        return absl::OkStatus();
      }
      case OpEffect::kInPlaceMetadata: {
        ViewStep step{&Op(op.functional_counterpart), node.args};
        step.args[0] = BoundArg();
        AOTCACHE_ASSIGN_OR_RETURN(
            int local,
            out_.EmitOne(*step.op, std::move(args), node.grad_enabled, name));
        objects_[self].chain.push_back(std::move(step));
        objects_[self].value = local;
        entry.result_values = {local};
        return absl::OkStatus();
      }
      case OpEffect::kInPlace: {
        const OpInfo& functional = Op(op.functional_counterpart);
        // zero_ -> zeros_like: only self carries over.
        args.resize(functional.schema.args.size());
        for (size_t k = node.args.size(); k < args.size(); ++k) {
          if (functional.schema.args[k].default_value.has_value()) {
            args[k] = BoundArg();
          }
        }
        AOTCACHE_ASSIGN_OR_RETURN(
            int updated,
            out_.EmitOne(functional, std::move(args), node.grad_enabled, name));
        entry.result_values = {updated};
        entry.chain = objects_[self].chain;
        return Write(self, updated, node.grad_enabled);
      }
      case OpEffect::kFunctional:
        break;
    }
    return absl::OkStatus();
  }

  absl::Status AddOutputs() {
    std::vector<int> objects;
    std::vector<std::pair<int, int>> kept;  // (input, object) written in place.
    for (int i = 0; i < vmd_.inputs_size(); ++i) {
      const v1::InputAliasInfo& in = vmd_.inputs(i);
      if (MutationStaysInGraph(in)) {
        kept.emplace_back(i, replay_.input_object[i]);
      } else if (in.mutates_data() || in.mutates_metadata()) {
        objects.push_back(replay_.input_object[i]);
      }
    }
    for (int v : graph_.outputs) objects.push_back(replay_.value_object[v]);
    for (size_t j = 0; j < graph_.outputs.size(); ++j) {
      if (vmd_.outputs(j).output_type() ==
          v1::OUTPUT_TYPE_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT) {
        objects.push_back(
            replay_.objects[replay_.value_object[graph_.outputs[j]]].view_base);
      }
    }
    for (int obj : objects) {
      AOTCACHE_ASSIGN_OR_RETURN(int local, Read(obj, /*grad_enabled=*/true));
      out_.AddOutput(local);
    }
    // keep_input_mutations: the new value is copied into the input in place.
    for (auto [input, obj] : kept) {
      if (input_local_[input] < 0) {
        return absl::InternalError(absl::StrCat(
            "inputs[", input,
            "] is merged into a synthetic base: its mutation cannot stay in "
            "the graph"));
      }
      AOTCACHE_ASSIGN_OR_RETURN(int updated, Read(obj, /*grad_enabled=*/false));
      AOTCACHE_RETURN_IF_ERROR(out_.Emit(Op("aten.copy_.default"),
                                         {TensorArg(input_local_[input]),
                                          TensorArg(updated), BoolArg(false)},
                                         /*grad_enabled=*/false, "copy_back")
                                   .status());
    }
    return absl::OkStatus();
  }

  const ResolvedGraph& graph_;
  const Replay& replay_;
  const v1::ViewAndMutationData& vmd_;
  GraphBuilder out_;
  std::vector<ObjectState> objects_;
  std::vector<StorageRoot> roots_;
  std::vector<int> input_local_;  // Per input: its local value, -1 if merged.
  std::vector<TapeEntry> tape_;
};

}  // namespace

absl::StatusOr<FunctionalProgram> BuildFunctionalProgram(
    const ResolvedGraph& graph, const Replay& replay,
    const v1::ViewAndMutationData& vmd) {
  return Functionalizer(graph, replay, vmd).Run();
}

absl::StatusOr<v1::Graph> Functionalize(const ResolvedGraph& graph,
                                        const Replay& replay,
                                        const v1::ViewAndMutationData& vmd) {
  AOTCACHE_ASSIGN_OR_RETURN(FunctionalProgram program,
                            BuildFunctionalProgram(graph, replay, vmd));
  return std::move(*program.forward).Finish();
}

}  // namespace aotcache
