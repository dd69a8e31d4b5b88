// GraphBuilder: emits a new Graph node by node, inferring each result's meta
// with the op registry, naming nodes, and refusing what the registry refuses.
// Functionalization builds its output with it.
// Thread-safety: not thread-safe; one builder per graph being built.
#ifndef AOTCACHE_CORE_ANALYSIS_GRAPH_BUILDER_H_
#define AOTCACHE_CORE_ANALYSIS_GRAPH_BUILDER_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "aotcache/v1/graph.pb.h"
#include "core/graph/op_registry.h"
#include "core/graph/tensor_meta.h"

namespace aotcache {

class GraphBuilder {
 public:
  // The new graph starts with `original`'s storages. Names of `original`'s
  // nodes are reserved: each may be given once, to the node that replaces
  // it; every other node gets a fresh name.
  explicit GraphBuilder(const v1::Graph& original);

  // Direct access, for inputs and constants.
  v1::Graph& graph() { return out_; }

  // Registers a value (an input, a constant) and returns its local id.
  int NewValue(std::string name, Meta meta);
  std::string FreshName(absl::string_view hint);

  // Emits `op(args)`, tensor arguments given as local ids, and returns the
  // local ids of its results (a multi-result op is read with getitem).
  absl::StatusOr<std::vector<int>> Emit(const OpInfo& op,
                                        std::vector<BoundArg> args,
                                        bool grad_enabled,
                                        absl::string_view name_hint);
  absl::StatusOr<int> EmitOne(const OpInfo& op, std::vector<BoundArg> args,
                              bool grad_enabled, absl::string_view name_hint);

  // How a value was computed: the op, its arguments (local ids) and which of
  // its results the value is. op is null for inputs and constants.
  struct Producer {
    const OpInfo* op = nullptr;
    std::vector<BoundArg> args;
    int result = 0;
    bool grad_enabled = false;
  };
  const Producer& producer(int local) const { return producers_[local]; }

  const Meta& meta(int local) const { return metas_[local]; }
  const std::string& name(int local) const { return names_[local]; }
  void AddOutput(int local) { out_.add_outputs(names_[local]); }

  // The graph, validated: Internal if it fails validation (a bug upstream).
  absl::StatusOr<v1::Graph> Finish() &&;

 private:
  v1::Graph out_;
  std::vector<std::string> names_;   // Per local value.
  std::vector<Meta> metas_;          // Per local value.
  std::vector<Producer> producers_;  // Per local value.
  absl::flat_hash_set<std::string> used_names_;
  absl::flat_hash_set<std::string> original_names_;    // Not yet given out.
  absl::flat_hash_map<std::string, int> next_suffix_;  // Per name hint.
};

}  // namespace aotcache

#endif  // AOTCACHE_CORE_ANALYSIS_GRAPH_BUILDER_H_
