// ResolvedGraph: a Graph that passed validation, with names resolved to value
// ids, arguments bound to schema positions (defaults filled in), getitem
// folded away and every value's meta inferred. Everything downstream (the
// analysis, the key) reads this, never the raw proto.
// Thread-safety: immutable once built; it points into the Graph it was built
// from, which must outlive it.
#ifndef AOTCACHE_CORE_GRAPH_RESOLVED_GRAPH_H_
#define AOTCACHE_CORE_GRAPH_RESOLVED_GRAPH_H_

#include <cstdint>
#include <vector>

#include "aotcache/v1/graph.pb.h"
#include "core/graph/op_registry.h"
#include "core/graph/tensor_meta.h"

namespace aotcache {

struct ValueInfo {
  enum class Source { kInput, kConstant, kNode };
  Source source;
  int index;       // Input, constant or resolved-node index.
  int result = 0;  // Which result of a multi-result node.
  Meta meta;
};

struct ResolvedNode {
  const OpInfo* op;
  std::vector<BoundArg> args;  // One per schema argument.
  bool grad_enabled;
  std::vector<int> results;  // Value ids.
  int proto_index;           // Index into Graph.nodes, for messages.
};

struct ResolvedGraph {
  const v1::Graph* graph = nullptr;
  std::vector<ValueInfo> values;  // Inputs first, then constants, then results.
  std::vector<ResolvedNode> nodes;
  std::vector<int> outputs;  // Value ids.
  // Storages numbered 0, 1, ... in order of first appearance among inputs;
  // every input has one (its own when the Graph leaves it unset).
  std::vector<int> input_storage;
  std::vector<int64_t> storage_size;  // In elements, per storage.

  int num_inputs() const { return graph->inputs_size(); }
  int num_constants() const { return graph->constants_size(); }
  int ConstantValue(int i) const { return num_inputs() + i; }
  const v1::Node& proto(const ResolvedNode& node) const {
    return graph->nodes(node.proto_index);
  }
};

}  // namespace aotcache

#endif  // AOTCACHE_CORE_GRAPH_RESOLVED_GRAPH_H_
