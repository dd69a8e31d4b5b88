#include "core/graph/canonical_graph.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/validate.h"

namespace aotcache {

using Kind = BoundArg::Kind;

v1::Argument ArgumentToProto(
    const BoundArg& b,
    absl::FunctionRef<const std::string&(int value)> name_of) {
  v1::Argument a;
  switch (b.kind) {
    case Kind::kNone:
      a.set_none(true);
      break;
    case Kind::kInt:
      a.set_int_(b.i);
      break;
    case Kind::kFloat:
      a.set_float_(b.f);
      break;
    case Kind::kBool:
      a.set_bool_(b.b);
      break;
    case Kind::kString:
      a.set_string(b.s);
      break;
    case Kind::kDevice:
      a.set_device(b.s);
      break;
    case Kind::kInts:
      a.mutable_ints();  // Set even when empty: [] is a value.
      for (int64_t v : b.ints) a.mutable_ints()->add_values(v);
      break;
    case Kind::kDType:
      a.set_dtype(b.dtype);
      break;
    case Kind::kTensor:
      a.set_node(name_of(b.values[0]));
      break;
    case Kind::kTensorList:
      a.mutable_nodes();
      for (int v : b.values) a.mutable_nodes()->add_names(name_of(v));
      break;
  }
  return a;
}

v1::Graph CanonicalGraph(const ResolvedGraph& g) {
  std::vector<std::string> names(g.values.size());
  for (size_t v = 0; v < names.size(); ++v) names[v] = absl::StrCat("v", v);
  auto name_of = [&](int v) -> const std::string& { return names[v]; };
  v1::Graph out;
  for (int64_t size : g.storage_size) {
    v1::Storage* s = out.add_storages();
    s->set_id(out.storages_size() - 1);
    s->set_size(size);
  }
  for (int i = 0; i < g.num_inputs(); ++i) {
    const v1::TensorMeta& given = g.graph->inputs(i).meta();
    v1::Input* in = out.add_inputs();
    in->set_name(names[i]);
    *in->mutable_meta() = MetaToProto(g.values[i].meta);
    in->mutable_meta()->set_requires_grad(given.requires_grad());
    in->mutable_meta()->set_is_leaf(given.is_leaf());
    in->set_storage(g.input_storage[i]);
  }
  for (int c = 0; c < g.num_constants(); ++c) {
    const int v = g.ConstantValue(c);
    v1::Constant* constant = out.add_constants();
    constant->set_name(names[v]);
    *constant->mutable_meta() = MetaToProto(g.values[v].meta);
    constant->set_data(g.graph->constants(c).data());
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ResolvedNode& node = g.nodes[n];
    v1::Node* proto = out.add_nodes();
    const bool several = node.results.size() != 1;
    proto->set_name(several ? absl::StrCat("n", n) : names[node.results[0]]);
    proto->set_op(node.op->qualified_name);
    proto->set_grad_mode(node.grad_enabled ? v1::GRAD_MODE_ENABLED
                                           : v1::GRAD_MODE_DISABLED);
    // The layout of a fresh result may be make_fx's (validate.cc): kept.
    for (int v : node.results) {
      *proto->add_output_meta() = MetaToProto(g.values[v].meta);
    }
    for (size_t k = 0; k < node.args.size(); ++k) {
      const ArgSchema& s = node.op->schema.args[k];
      if (!s.kwarg_only) {
        *proto->add_args() = ArgumentToProto(node.args[k], name_of);
      } else if (!node.args[k].is_none()) {
        (*proto->mutable_kwargs())[s.name] =
            ArgumentToProto(node.args[k], name_of);
      }
    }
    if (!several) continue;
    const std::string base = proto->name();
    for (size_t r = 0; r < node.results.size(); ++r) {
      v1::Node* get = out.add_nodes();
      get->set_name(names[node.results[r]]);
      get->set_op("getitem");
      get->add_args()->set_node(base);
      get->add_args()->set_int_(static_cast<int64_t>(r));
    }
  }
  for (int v : g.outputs) out.add_outputs(names[v]);
  return out;
}

absl::StatusOr<v1::Graph> CanonicalInternalGraph(const v1::Graph& graph) {
  absl::StatusOr<ResolvedGraph> resolved =
      ValidateGraph(graph, InternalGraphLimits());
  if (absl::IsResourceExhausted(resolved.status())) return resolved.status();
  if (!resolved.ok()) {
    return absl::InternalError(
        absl::StrCat("built an invalid graph: ", resolved.status().message()));
  }
  return CanonicalGraph(*resolved);
}

}  // namespace aotcache
