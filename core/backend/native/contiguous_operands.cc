#include "core/backend/native/contiguous_operands.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/backend/native/kernel_patterns.h"
#include "core/graph/op_registry.h"
#include "core/graph/validate.h"
#include "core/status_macros.h"

namespace aotcache {

absl::StatusOr<v1::Graph> MakeOperandsContiguous(const v1::Graph& graph) {
  AOTCACHE_ASSIGN_OR_RETURN(ResolvedGraph g,
                            ValidateGraph(graph, InternalGraphLimits()));
  // Per proto node, the positional arguments to read through a clone.
  absl::flat_hash_map<int, std::vector<int>> clone_args;
  for (const ResolvedNode& node : g.nodes) {
    std::vector<int> values = ValuesToMakeContiguous(g, node);
    for (size_t k = 0; k < node.args.size(); ++k) {
      const BoundArg& a = node.args[k];
      if (a.kind == BoundArg::Kind::kTensor &&
          static_cast<int>(k) < g.proto(node).args_size() &&
          std::find(values.begin(), values.end(), a.values[0]) !=
              values.end()) {
        clone_args[node.proto_index].push_back(static_cast<int>(k));
      }
    }
  }
  if (clone_args.empty()) return graph;

  absl::flat_hash_set<std::string> taken;
  for (const v1::Input& in : graph.inputs()) taken.insert(in.name());
  for (const v1::Constant& c : graph.constants()) taken.insert(c.name());
  for (const v1::Node& n : graph.nodes()) taken.insert(n.name());
  int next = 0;
  auto fresh_name = [&] {
    std::string name;
    do name = absl::StrCat("contiguous", next++);
    while (taken.contains(name));
    return name;
  };

  v1::Graph out = graph;
  out.clear_nodes();
  // Value -> its clone, shared by the nodes reading it until a node writes
  // in place (the clone would then be stale).
  absl::flat_hash_map<std::string, std::string> clone_of;
  for (int i = 0; i < graph.nodes_size(); ++i) {
    v1::Node node = graph.nodes(i);
    const OpInfo* op = OpRegistry::Get().Find(node.op());
    if (op != nullptr && (op->effect == OpEffect::kInPlace ||
                          op->effect == OpEffect::kInPlaceMetadata)) {
      clone_of.clear();
    }
    auto it = clone_args.find(i);
    if (it != clone_args.end()) {
      for (int k : it->second) {
        std::string* ref = node.mutable_args(k)->mutable_node();
        auto [clone, inserted] = clone_of.try_emplace(*ref);
        if (inserted) {
          clone->second = fresh_name();
          v1::Node* copy = out.add_nodes();
          copy->set_name(clone->second);
          copy->set_op("aten.clone.default");
          copy->add_args()->set_node(*ref);
          (*copy->mutable_kwargs())["memory_format"].set_string(
              "torch.contiguous_format");
          copy->set_grad_mode(node.grad_mode());
        }
        *ref = clone->second;
      }
    }
    *out.add_nodes() = std::move(node);
  }
  return out;
}

}  // namespace aotcache
