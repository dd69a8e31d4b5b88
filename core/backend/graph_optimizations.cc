#include "core/backend/graph_optimizations.h"

#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/graph/deterministic_bytes.h"
#include "core/graph/op_registry.h"

namespace aotcache {
namespace {

bool HasSideEffects(const v1::Node& node) {
  if (IsGetItem(node.op())) return false;
  const OpInfo* op = OpRegistry::Get().Find(node.op());
  return op == nullptr || op->effect == OpEffect::kInPlace ||
         op->effect == OpEffect::kInPlaceMetadata;
}

bool IsMergeable(const v1::Node& node) {
  if (IsGetItem(node.op())) return true;
  const OpInfo* op = OpRegistry::Get().Find(node.op());
  return op != nullptr && op->randomness == Randomness::kDeterministic &&
         op->effect != OpEffect::kInPlace &&
         op->effect != OpEffect::kInPlaceMetadata;
}

template <typename F>
void ForEachRef(v1::Argument& a, F f) {
  if (a.value_case() == v1::Argument::kNode) f(*a.mutable_node());
  if (a.value_case() == v1::Argument::kNodes) {
    for (std::string& n : *a.mutable_nodes()->mutable_names()) f(n);
  }
}

template <typename F>
void ForEachRef(v1::Node& node, F f) {
  for (v1::Argument& a : *node.mutable_args()) ForEachRef(a, f);
  for (auto& [name, a] : *node.mutable_kwargs()) ForEachRef(a, f);
}

}  // namespace

v1::Graph EliminateDeadCode(const v1::Graph& graph) {
  absl::flat_hash_set<std::string> live(graph.outputs().begin(),
                                        graph.outputs().end());
  std::vector<bool> keep(graph.nodes_size(), false);
  for (int i = graph.nodes_size() - 1; i >= 0; --i) {
    v1::Node node = graph.nodes(i);
    if (!live.contains(node.name()) && !HasSideEffects(node)) continue;
    keep[i] = true;
    ForEachRef(node, [&](std::string& ref) { live.insert(ref); });
  }
  v1::Graph out = graph;
  out.clear_nodes();
  for (int i = 0; i < graph.nodes_size(); ++i) {
    if (keep[i]) *out.add_nodes() = graph.nodes(i);
  }
  return out;
}

v1::Graph EliminateCommonSubexpressions(const v1::Graph& graph) {
  absl::flat_hash_map<std::string, std::string> representative;
  std::map<std::string, std::string> seen;  // Canonical form -> name.
  v1::Graph out = graph;
  out.clear_nodes();
  for (v1::Node node : graph.nodes()) {
    ForEachRef(node, [&](std::string& ref) {
      auto it = representative.find(ref);
      if (it != representative.end()) ref = it->second;
    });
    if (IsMergeable(node)) {
      v1::Node shape = node;
      shape.clear_name();
      shape.clear_output_meta();
      std::string form = DeterministicBytes(shape);
      auto [it, inserted] = seen.emplace(form, node.name());
      if (!inserted) {
        representative[node.name()] = it->second;
        continue;
      }
    }
    *out.add_nodes() = std::move(node);
  }
  for (std::string& name : *out.mutable_outputs()) {
    auto it = representative.find(name);
    if (it != representative.end()) name = it->second;
  }
  return out;
}

}  // namespace aotcache
