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

// One node of the recorded history.
struct GradNode {
  enum class Kind {
    kRule,        // An op: its derivative rule.
    kCopySlices,  // An in-place op on a view: the base's new history.
    kChainView,   // A view regenerated from its base's new history.
  };
  Kind kind;
  const TapeEntry* entry;  // kRule, kCopySlices: the op.
  DerivativeRule rule;     // kRule, kCopySlices.
  // Per argument, per element. kCopySlices: argument 0 is the base's old
  // history. kChainView: one edge, the base's.
  std::vector<std::vector<Edge>> next;
  ViewChain chain;  // kCopySlices, kChainView: from the base to the view.
  Meta base_meta;   // kChainView.
};

class Engine {
 public:
  Engine(const Analysis& analysis, FunctionalProgram program,
         Recompute recompute)
      : a_(analysis),
        program_(std::move(program)),
        backward_(v1::Graph()),
        saved_(program_.forward.get(), &backward_, recompute) {}

  absl::StatusOr<JointGraphs> Run() {
    AOTCACHE_RETURN_IF_ERROR(InitEdges());
    for (const TapeEntry& entry : program_.tape) {
      AOTCACHE_RETURN_IF_ERROR(Record(entry));
    }
    AOTCACHE_RETURN_IF_ERROR(SeedTangents());
    AOTCACHE_RETURN_IF_ERROR(Backpropagate());
    return Finish();
  }

 private:
  const Replay& replay() const { return a_.replay; }

  // Inputs that require grad are where gradients end. Mutated inputs that
  // share a storage are views of their synthetic base: gradients end there
  // (at input index num_inputs + base), and the members reach it through
  // their views.
  absl::Status InitEdges() {
    edges_.assign(replay().objects.size(), Edge());
    base_version_.assign(replay().objects.size(), 0);
    created_at_version_.assign(replay().objects.size(), 0);
    view_chain_.assign(replay().objects.size(), std::nullopt);
    const v1::ViewAndMutationData& vmd = a_.view_and_mutation;
    std::vector<bool> merged(a_.graph.num_inputs(), false);
    for (int b = 0; b < vmd.synthetic_bases_size(); ++b) {
      const v1::SyntheticBase& base = vmd.synthetic_bases(b);
      int pseudo =
          replay().objects[replay().input_object[base.inputs(0)]].view_base;
      bool requires_grad = false;
      for (int i : base.inputs()) {
        int obj = replay().input_object[i];
        if (replay().objects[obj].view_base != pseudo || pseudo < 0) {
          return absl::UnimplementedError(
              "autodiff: a mutated input sharing its storage is a leaf that "
              "requires grad; not supported yet");
        }
        requires_grad |= a_.graph.graph->inputs(i).meta().requires_grad();
        merged[i] = true;
        // A view of the base: it regenerates its history from the base's
        // after an in-place write, even if it had none.
        const Meta& m = a_.graph.values[i].meta;
        ViewStep step{
            OpRegistry::Get().Find("aten.as_strided.default"),
            {NoneArg(), IntsArg(m.shape), IntsArg(m.stride), IntArg(m.offset)}};
        view_chain_[obj] = ViewChain{std::move(step)};
      }
      if (!requires_grad) continue;
      edges_[pseudo] = Edge::Input(a_.graph.num_inputs() + b);
      for (int i : base.inputs()) {
        int obj = replay().input_object[i];
        GradNode view;
        view.kind = GradNode::Kind::kChainView;
        view.entry = nullptr;
        view.rule = nullptr;
        view.next = {{edges_[pseudo]}};
        view.chain = *view_chain_[obj];
        view.base_meta = ContiguousMeta({base.size()}, base.dtype());
        edges_[obj] = Edge::Node(AddNode(std::move(view), 1), 0);
      }
    }
    for (int i = 0; i < a_.graph.num_inputs(); ++i) {
      if (!merged[i] && a_.graph.graph->inputs(i).meta().requires_grad()) {
        edges_[replay().input_object[i]] = Edge::Input(i);
      }
    }
    return absl::OkStatus();
  }

  int ObjectOf(int value) const { return replay().value_object[value]; }

  // The edge of an object about to be read. A view whose base was modified
  // in place with grad mode on since it was made gets its history
  // regenerated from the base's (as autograd regenerates its grad_fn).
  absl::StatusOr<Edge> EdgeOf(int obj) {
    const TensorObject& o = replay().objects[obj];
    // A view with no history regenerates too once its base has one (a
    // value that requires grad written into it), as in eager; a detached
    // alias (no view chain) never does.
    if (o.view_base < 0 ||
        (edges_[obj].none() && !view_chain_[obj].has_value()) ||
        base_version_[o.view_base] == created_at_version_[obj]) {
      return edges_[obj];
    }
    if (!view_chain_[obj].has_value()) {
      return absl::UnimplementedError(
          "autodiff: a view of a tensor other than its storage's first "
          "(a view of a detached alias) is read after its base was modified "
          "in place; not supported yet");
    }
    GradNode regen;
    regen.kind = GradNode::Kind::kChainView;
    regen.entry = nullptr;
    regen.rule = nullptr;
    regen.next = {{edges_[o.view_base]}};
    regen.chain = *view_chain_[obj];
    regen.base_meta = replay().objects[o.view_base].meta;
    edges_[obj] = Edge::Node(AddNode(std::move(regen), 1), 0);
    created_at_version_[obj] = base_version_[o.view_base];
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
    int id =
        AddNode({GradNode::Kind::kRule, &entry, rule, std::move(next), {}, {}},
                node.results.size());
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
        if (base >= 0) {
          created_at_version_[obj] = base_version_[base];
          if (entry.root_object == base) {
            view_chain_[obj] =
                ViewChain(entry.chain.begin() + entry.root_chain_length,
                          entry.chain.end());
          }
        }
        break;
      }
      case OpEffect::kInPlace:
      case OpEffect::kInPlaceMetadata: {
        int self = ObjectOf(node.args[0].values[0]);
        const TensorObject& o = replay().objects[self];
        if (o.view_base >= 0 && op.effect == OpEffect::kInPlace) {
          // CopySlices: the base's history is rebased; the op's gradient
          // for the view's old value lands in the view's region of the
          // base's gradient.
          int base = o.view_base;
          if (entry.root_object != base) {
            return absl::UnimplementedError(
                "autodiff: an in-place op with grad mode on writes a view of "
                "a tensor other than its storage's first (a view of a "
                "detached alias); not supported yet");
          }
          GradNode& cs = nodes_[id];
          cs.kind = GradNode::Kind::kCopySlices;
          cs.chain = ViewChain(entry.chain.begin() + entry.root_chain_length,
                               entry.chain.end());
          AOTCACHE_ASSIGN_OR_RETURN(Edge base_edge, EdgeOf(base));
          cs.next[0] = {base_edge};
          edges_[base] = Edge::Node(id, 0);
          ++base_version_[base];  // The view itself regenerates on read.
          break;
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

  // Appends a node with `num_results` gradient slots; returns its index.
  int AddNode(GradNode node, size_t num_results) {
    nodes_.push_back(std::move(node));
    node_grads_.emplace_back(num_results, std::nullopt);
    return static_cast<int>(nodes_.size()) - 1;
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
    input_grads_.assign(
        a_.graph.num_inputs() + a_.view_and_mutation.synthetic_bases_size(),
        std::nullopt);
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
      bool any = false;
      for (const auto& g : node_grads_[n]) any |= g.has_value();
      if (!any) continue;
      switch (nodes_[n].kind) {
        case GradNode::Kind::kRule:
          AOTCACHE_RETURN_IF_ERROR(ApplyRule(n));
          break;
        case GradNode::Kind::kCopySlices:
          AOTCACHE_RETURN_IF_ERROR(ApplyCopySlices(n));
          break;
        case GradNode::Kind::kChainView:
          AOTCACHE_RETURN_IF_ERROR(ApplyChainView(n));
          break;
      }
      AOTCACHE_RETURN_IF_ERROR(status_);
    }
    return absl::OkStatus();
  }

  std::vector<bool> Needs(const GradNode& node) const {
    std::vector<bool> needs(node.next.size(), false);
    for (size_t k = 0; k < node.next.size(); ++k) {
      for (const Edge& e : node.next[k]) needs[k] = needs[k] || !e.none();
    }
    return needs;
  }

  void Propagate(const GradNode& node, const GradContext& ctx,
                 size_t first_arg) {
    for (size_t k = first_arg; k < node.next.size(); ++k) {
      for (size_t e = 0; e < node.next[k].size(); ++e) {
        const std::optional<int>& g = ctx.grads()[k][e];
        if (g.has_value()) Accumulate(node.next[k][e], *g);
      }
    }
  }

  absl::Status ApplyRule(int n) {
    const GradNode& node = nodes_[n];
    GradContext ctx(*node.entry, *program_.forward, &backward_, &saved_,
                    node_grads_[n], Needs(node));
    // A multi-result op whose differentiable result got no gradient
    // contributes nothing.
    if (node.entry->node->results.size() == 1 ||
        node_grads_[n][0].has_value()) {
      node.rule(ctx);
    }
    AOTCACHE_RETURN_IF_ERROR(ctx.status());
    Propagate(node, ctx, 0);
    return absl::OkStatus();
  }

  absl::Status ApplyCopySlices(int n) {
    const GradNode& node = nodes_[n];
    int g_base = *node_grads_[n][0];
    AOTCACHE_ASSIGN_OR_RETURN(int g_view,
                              ApplyChain(backward_, node.chain, g_base, false));
    std::vector<bool> needs = Needs(node);
    needs[0] = true;  // The op's gradient for the view's old value.
    GradContext ctx(*node.entry, *program_.forward, &backward_, &saved_,
                    {g_view}, needs);
    node.rule(ctx);
    AOTCACHE_RETURN_IF_ERROR(ctx.status());
    if (!node.next[0][0].none()) {
      int self_grad;
      if (ctx.grads()[0][0].has_value()) {
        self_grad = *ctx.grads()[0][0];
      } else {
        AOTCACHE_ASSIGN_OR_RETURN(self_grad, ZerosLike(backward_.meta(g_view)));
      }
      AOTCACHE_ASSIGN_OR_RETURN(
          int g_old,
          WriteThroughChain(backward_, node.chain, g_base, self_grad, false));
      Accumulate(node.next[0][0], g_old);
    }
    Propagate(node, ctx, 1);
    return absl::OkStatus();
  }

  absl::Status ApplyChainView(int n) {
    const GradNode& node = nodes_[n];
    if (node.next[0][0].none()) return absl::OkStatus();
    AOTCACHE_ASSIGN_OR_RETURN(int zeros, ZerosLike(node.base_meta));
    AOTCACHE_ASSIGN_OR_RETURN(int g_base,
                              WriteThroughChain(backward_, node.chain, zeros,
                                                *node_grads_[n][0], false));
    Accumulate(node.next[0][0], g_base);
    return absl::OkStatus();
  }

  absl::StatusOr<int> ZerosLike(const Meta& like) {
    return backward_.EmitOne(*OpRegistry::Get().Find("aten.zeros.default"),
                             {IntsArg(like.shape), DTypeArg(like.dtype),
                              NoneArg(), NoneArg(), NoneArg()},
                             false, "zeros");
  }

  absl::StatusOr<JointGraphs> Finish() {
    JointGraphs out;
    for (size_t i = 0; i < input_grads_.size(); ++i) {
      std::vector<int>& to = static_cast<int>(i) < a_.graph.num_inputs()
                                 ? out.input_grad_output
                                 : out.synthetic_base_grad_output;
      if (!input_grads_[i].has_value()) {
        to.push_back(-1);
        continue;
      }
      to.push_back(backward_.graph().outputs_size());
      backward_.AddOutput(*input_grads_[i]);
    }
    // Saved values are the forward's trailing outputs and the backward's
    // leading inputs (they were added after the tangents: move them first).
    for (int local : saved_.forward_locals())
      program_.forward->AddOutput(local);
    out.num_saved = static_cast<int>(saved_.forward_locals().size());
    out.saved_bytes = saved_.saved_bytes();
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
  // Per view object made by a recorded view op of its storage's root: the
  // chain that regenerates it from the base.
  std::vector<std::optional<ViewChain>> view_chain_;
  std::vector<GradNode> nodes_;
  std::vector<std::vector<std::optional<int>>> node_grads_;
  std::vector<std::optional<int>> input_grads_;
  absl::Status status_;
};

}  // namespace

absl::StatusOr<JointGraphs> BuildJointGraphs(const Analysis& analysis,
                                             Recompute recompute) {
  AOTCACHE_ASSIGN_OR_RETURN(
      FunctionalProgram program,
      BuildFunctionalProgram(analysis.graph, analysis.replay,
                             analysis.view_and_mutation));
  return Engine(analysis, std::move(program), recompute).Run();
}

}  // namespace aotcache
