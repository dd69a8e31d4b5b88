#include "core/autodiff/joint_graph.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/autodiff/derivatives.h"
#include "core/autodiff/grad_context.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

// Where gradient flowing into a tensor goes: a recorded op's result, an
// input of the graph, or nowhere.
struct Edge {
  enum class Kind { kNone, kNode, kInput };
  Kind kind = Kind::kNone;
  int index = -1;  // Node or input index.
  int slot = 0;    // Which result of the node.

  static Edge Node(int n, int slot) { return {Kind::kNode, n, slot}; }
  static Edge Input(int i) { return {Kind::kInput, i, 0}; }
  bool none() const { return kind == Kind::kNone; }
};

// One op autograd recorded.
struct GradNode {
  const TapeEntry* entry;
  DerivativeRule rule;
  std::vector<std::vector<Edge>> next;  // Per argument, per element.
};

class Engine {
 public:
  Engine(const Analysis& analysis, FunctionalProgram program)
      : a_(analysis),
        program_(std::move(program)),
        backward_(v1::Graph()),
        saved_(program_.forward.get(), &backward_) {}

  absl::StatusOr<JointGraphs> Run() {
    if (a_.view_and_mutation.synthetic_bases_size() > 0) {
      return absl::UnimplementedError(
          "autodiff: mutated inputs that share a storage (synthetic bases) "
          "are not supported yet");
    }
    InitEdges();
    for (const TapeEntry& entry : program_.tape) {
      AOTCACHE_RETURN_IF_ERROR(Record(entry));
    }
    AOTCACHE_RETURN_IF_ERROR(SeedTangents());
    AOTCACHE_RETURN_IF_ERROR(Backpropagate());
    return Finish();
  }

 private:
  const Replay& replay() const { return a_.replay; }

  void InitEdges() {
    edges_.assign(replay().objects.size(), Edge());
    base_version_.assign(replay().objects.size(), 0);
    created_at_version_.assign(replay().objects.size(), 0);
    for (int i = 0; i < a_.graph.num_inputs(); ++i) {
      if (a_.graph.graph->inputs(i).meta().requires_grad()) {
        edges_[replay().input_object[i]] = Edge::Input(i);
      }
    }
  }

  int ObjectOf(int value) const { return replay().value_object[value]; }

  // The edge of an object about to be read by a recorded op.
  absl::StatusOr<Edge> EdgeOf(int obj) const {
    const TensorObject& o = replay().objects[obj];
    if (o.view_base >= 0 && !edges_[obj].none() &&
        base_version_[o.view_base] != created_at_version_[obj]) {
      return absl::UnimplementedError(
          "autodiff: a view is read after its base was modified in place "
          "with grad mode on (its history must be regenerated); not "
          "supported yet");
    }
    return edges_[obj];
  }

  absl::Status Record(const TapeEntry& entry) {
    const ResolvedNode& node = *entry.node;
    const OpInfo& op = *node.op;
    // Edges of the differentiable arguments, as they are now.
    std::vector<std::vector<Edge>> next(node.args.size());
    bool any = false;
    for (size_t k = 0; k < node.args.size(); ++k) {
      for (int v : node.args[k].values) {
        Edge e;
        if (op.IsArgDifferentiable(static_cast<int>(k)) &&
            IsFloating(a_.graph.values[v].meta.dtype)) {
          AOTCACHE_ASSIGN_OR_RETURN(e, EdgeOf(ObjectOf(v)));
        }
        any |= !e.none();
        next[k].push_back(e);
      }
    }
    bool recorded = node.grad_enabled && any;
    if (op.effect == OpEffect::kDetach) {
      return absl::OkStatus();  // A fresh object without history.
    }
    if (!recorded) {
      // Untracked: in-place ops keep the object's edge; fresh results and
      // views get none.
      return absl::OkStatus();
    }
    std::string rule_op = op.qualified_name;
    if (op.effect == OpEffect::kInPlace ||
        op.effect == OpEffect::kInPlaceMetadata) {
      rule_op = op.functional_counterpart;
    }
    DerivativeRule rule = FindDerivative(rule_op);
    if (rule == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat("autodiff: no derivative for ", rule_op));
    }
    int id = static_cast<int>(nodes_.size());
    nodes_.push_back({&entry, rule, std::move(next)});
    switch (op.effect) {
      case OpEffect::kFunctional:
      case OpEffect::kUnsafeView:
        for (size_t r = 0; r < node.results.size(); ++r) {
          if (op.differentiable_results[r] &&
              IsFloating(a_.graph.values[node.results[r]].meta.dtype)) {
            edges_[ObjectOf(node.results[r])] =
                Edge::Node(id, static_cast<int>(r));
          }
        }
        break;
      case OpEffect::kView: {
        int obj = ObjectOf(node.results[0]);
        edges_[obj] = Edge::Node(id, 0);
        int base = replay().objects[obj].view_base;
        if (base >= 0) created_at_version_[obj] = base_version_[base];
        break;
      }
      case OpEffect::kInPlace:
      case OpEffect::kInPlaceMetadata: {
        int self = ObjectOf(node.args[0].values[0]);
        const TensorObject& o = replay().objects[self];
        if (o.view_base >= 0 && op.effect == OpEffect::kInPlace) {
          return absl::UnimplementedError(
              "autodiff: an in-place op on a view with grad mode on "
              "(autograd's CopySlices) is not supported yet");
        }
        edges_[self] = Edge::Node(id, 0);
        ++base_version_[self];  // Views of it must regenerate their history.
        break;
      }
      case OpEffect::kDetach:
        break;
    }
    return absl::OkStatus();
  }

  // Adds `value` to the gradient flowing into `edge`.
  void Accumulate(const Edge& edge, int value) {
    if (edge.none() || value < 0) return;
    std::optional<int>* slot = edge.kind == Edge::Kind::kInput
                                   ? &input_grads_[edge.index]
                                   : &node_grads_[edge.index][edge.slot];
    if (!slot->has_value()) {
      *slot = value;
      return;
    }
    const OpInfo& add = *OpRegistry::Get().Find("aten.add.Tensor");
    absl::StatusOr<int> sum = backward_.EmitOne(
        add, {TensorArg(**slot), TensorArg(value), NumberArg(1)},
        /*grad_enabled=*/false, "grad_sum");
    if (!sum.ok()) {
      status_ = sum.status();
      return;
    }
    *slot = *sum;
  }

  absl::Status SeedTangents() {
    input_grads_.assign(a_.graph.num_inputs(), std::nullopt);
    node_grads_.resize(nodes_.size());
    for (size_t n = 0; n < nodes_.size(); ++n) {
      node_grads_[n].assign(nodes_[n].entry->node->results.size(),
                            std::nullopt);
    }
    const v1::ViewAndMutationData& vmd = a_.view_and_mutation;
    for (int t = 0; t < vmd.tangents_size(); ++t) {
      const v1::TangentInfo& info = vmd.tangents(t);
      v1::Input* in = backward_.graph().add_inputs();
      in->set_name(backward_.FreshName(absl::StrCat("tangent_", t)));
      *in->mutable_meta() = info.meta();
      in->mutable_meta()->set_is_leaf(true);
      int local = backward_.NewValue(in->name(), MetaFromProto(info.meta()));
      int obj = -1;
      switch (info.source()) {
        case v1::TANGENT_SOURCE_MUTATED_INPUT:
          obj = replay().input_object[info.index()];
          break;
        case v1::TANGENT_SOURCE_USER_OUTPUT:
          obj = ObjectOf(a_.graph.outputs[info.index()]);
          break;
        default: {
          // The intermediate base of the k-th save-as-output alias.
          int k = 0;
          for (int j = 0; j < vmd.outputs_size(); ++j) {
            if (vmd.outputs(j).output_type() ==
                v1::OUTPUT_TYPE_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT) {
              if (k++ == info.index()) {
                obj = replay().objects[ObjectOf(a_.graph.outputs[j])].view_base;
              }
            }
          }
        }
      }
      if (obj < 0)
        return absl::InternalError("autodiff: tangent without source");
      AOTCACHE_ASSIGN_OR_RETURN(Edge e, EdgeOf(obj));
      Accumulate(e, local);
    }
    return status_;
  }

  absl::Status Backpropagate() {
    for (int n = static_cast<int>(nodes_.size()) - 1; n >= 0; --n) {
      const GradNode& node = nodes_[n];
      bool any = false;
      for (const auto& g : node_grads_[n]) any |= g.has_value();
      if (!any) continue;
      std::vector<bool> needs(node.next.size(), false);
      for (size_t k = 0; k < node.next.size(); ++k) {
        for (const Edge& e : node.next[k]) needs[k] = needs[k] || !e.none();
      }
      GradContext ctx(*node.entry, *program_.forward, &backward_, &saved_,
                      node_grads_[n], needs);
      // A multi-result op whose differentiable result got no gradient
      // contributes nothing.
      if (node.entry->node->results.size() == 1 ||
          node_grads_[n][0].has_value()) {
        node.rule(ctx);
      }
      AOTCACHE_RETURN_IF_ERROR(ctx.status());
      for (size_t k = 0; k < node.next.size(); ++k) {
        for (size_t e = 0; e < node.next[k].size(); ++e) {
          const std::optional<int>& g = ctx.grads()[k][e];
          if (g.has_value()) Accumulate(node.next[k][e], *g);
        }
      }
      AOTCACHE_RETURN_IF_ERROR(status_);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<JointGraphs> Finish() {
    JointGraphs out;
    for (int i = 0; i < a_.graph.num_inputs(); ++i) {
      if (!input_grads_[i].has_value()) {
        out.input_grad_output.push_back(-1);
        continue;
      }
      out.input_grad_output.push_back(backward_.graph().outputs_size());
      backward_.AddOutput(*input_grads_[i]);
    }
    // Saved values are the forward's trailing outputs and the backward's
    // leading inputs (they were added after the tangents: move them first).
    for (int local : saved_.forward_locals())
      program_.forward->AddOutput(local);
    out.num_saved = static_cast<int>(saved_.forward_locals().size());
    auto* inputs = backward_.graph().mutable_inputs();
    int num_tangents = inputs->size() - out.num_saved;
    std::rotate(inputs->begin(), inputs->begin() + num_tangents, inputs->end());
    AOTCACHE_ASSIGN_OR_RETURN(out.forward,
                              std::move(*program_.forward).Finish());
    AOTCACHE_ASSIGN_OR_RETURN(out.backward, std::move(backward_).Finish());
    return out;
  }

  const Analysis& a_;
  FunctionalProgram program_;
  GraphBuilder backward_;
  SavedValues saved_;
  std::vector<Edge> edges_;              // Per tensor object.
  std::vector<int> base_version_;        // Per object: tracked in-place count.
  std::vector<int> created_at_version_;  // Per view object: its base's version.
  std::vector<GradNode> nodes_;
  std::vector<std::vector<std::optional<int>>> node_grads_;
  std::vector<std::optional<int>> input_grads_;
  absl::Status status_;
};

}  // namespace

absl::StatusOr<JointGraphs> BuildJointGraphs(const Analysis& analysis) {
  AOTCACHE_ASSIGN_OR_RETURN(
      FunctionalProgram program,
      BuildFunctionalProgram(analysis.graph, analysis.replay,
                             analysis.view_and_mutation));
  return Engine(analysis, std::move(program)).Run();
}

}  // namespace aotcache
