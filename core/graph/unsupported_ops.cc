#include "core/graph/unsupported_ops.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/bind_arguments.h"
#include "core/graph/op_registry.h"

namespace aotcache {

absl::Status CheckOpsSupported(const v1::Graph& graph) {
  constexpr int kMaxListed = 32;  // Bounds the message, not the check.
  struct Missing {
    int first_node;
    int count;
  };
  std::vector<std::string> order;
  absl::flat_hash_map<std::string, Missing> missing;
  for (int i = 0; i < graph.nodes_size(); ++i) {
    const std::string& op = graph.nodes(i).op();
    if (IsGetItem(op) || OpRegistry::Get().Find(op) != nullptr) continue;
    auto [it, added] = missing.try_emplace(op, Missing{i, 0});
    ++it->second.count;
    if (added) order.push_back(op);
  }
  if (order.empty()) return absl::OkStatus();
  if (order.size() == 1 && missing[order[0]].count == 1) {
    int node = missing[order[0]].first_node;
    // Named as validation names a node.
    return absl::InvalidArgumentError(absl::StrCat(
        "node ", Quoted(graph.nodes(node).name()), " (nodes[", node, "], ",
        Quoted(order[0]), "): unsupported op ", Quoted(order[0])));
  }
  std::vector<std::string> listed;
  for (size_t k = 0; k < order.size() && k < kMaxListed; ++k) {
    const Missing& m = missing[order[k]];
    std::string first = Quoted(graph.nodes(m.first_node).name());
    listed.push_back(m.count == 1
                         ? absl::StrCat(Quoted(order[k]), " (node ", first, ")")
                         : absl::StrCat(Quoted(order[k]), " (", m.count,
                                        " nodes, first ", first, ")"));
  }
  if (order.size() > kMaxListed) {
    listed.push_back(absl::StrCat("and ", order.size() - kMaxListed, " more"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "nodes: ",
      order.size() == 1 ? std::string("unsupported op ")
                        : absl::StrCat(order.size(), " unsupported ops: "),
      absl::StrJoin(listed, ", ")));
}

}  // namespace aotcache
