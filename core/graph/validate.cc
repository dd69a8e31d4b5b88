#include "core/graph/validate.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/bind_arguments.h"
#include "core/graph/decompositions.h"
#include "core/graph/unsupported_ops.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

using Kind = BoundArg::Kind;

absl::Status Invalid(absl::string_view where, absl::string_view detail) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", detail));
}

std::string NodeWhere(const v1::Graph& graph, int i) {
  return absl::StrCat("node ", Quoted(graph.nodes(i).name()), " (nodes[", i,
                      "], ", Quoted(graph.nodes(i).op()), ")");
}

// Checks a meta given by the client: dtype, device, sizes, strides, limits.
absl::Status CheckMeta(absl::FunctionRef<std::string()> where_fn,
                       const v1::TensorMeta& meta, const GraphLimits& limits) {
  auto where = [&] { return where_fn(); };
  if (DTypeRank(meta.dtype()) < 0) {
    return Invalid(where(), "dtype is unspecified or unsupported");
  }
  if (!meta.device().empty() && meta.device() != "cpu") {
    return Invalid(where(), absl::StrCat("device ", Quoted(meta.device()),
                                         " is not supported (cpu only)"));
  }
  if (meta.shape_size() > limits.max_rank) {
    return absl::ResourceExhaustedError(
        absl::StrCat(where(), ": rank ", meta.shape_size(),
                     " exceeds the limit ", limits.max_rank));
  }
  if (meta.stride_size() != 0 && meta.stride_size() != meta.shape_size()) {
    return Invalid(where(),
                   absl::StrCat("stride has ", meta.stride_size(),
                                " entries for ", meta.shape_size(), " dims"));
  }
  int64_t numel = 1;
  int64_t span = 1;  // Of its contiguous strides: sizes of 0 counted as 1.
  for (int64_t s : meta.shape()) {
    if (s < 0) return Invalid(where(), absl::StrCat("negative size ", s));
    if (__builtin_mul_overflow(numel, s, &numel)) {
      return Invalid(where(), "element count overflows int64");
    }
    if (numel > limits.max_numel) {
      return absl::ResourceExhaustedError(absl::StrCat(
          where(), ": element count exceeds the limit ", limits.max_numel));
    }
    if (__builtin_mul_overflow(span, std::max<int64_t>(s, 1), &span) ||
        span > limits.max_numel) {
      return absl::ResourceExhaustedError(
          absl::StrCat(where(), ": sizes multiply past the limit ",
                       limits.max_numel, " (an empty dim counts as 1)"));
    }
  }
  for (int64_t s : meta.stride()) {
    if (s < 0) return Invalid(where(), absl::StrCat("negative stride ", s));
    if (s > limits.max_numel) return Invalid(where(), "stride too large");
  }
  if (meta.storage_offset() < 0 || meta.storage_offset() > limits.max_numel) {
    return Invalid(where(), "storage_offset out of range");
  }
  // Each stride and size is bounded, their products are not: the storage
  // the tensor reaches must be (StorageExtent saturates on overflow).
  if (MetaFromProto(meta).StorageExtent() > limits.max_numel) {
    return absl::ResourceExhaustedError(
        absl::StrCat(where(), ": reaches past element ", limits.max_numel,
                     " of its storage (the limit)"));
  }
  return absl::OkStatus();
}

class Resolver {
 public:
  Resolver(const v1::Graph& graph, const GraphLimits& limits)
      : graph_(graph), limits_(limits) {
    resolved_.graph = &graph;
  }

  absl::StatusOr<ResolvedGraph> Run() {
    resolved_.values.reserve(graph_.inputs_size() + graph_.constants_size() +
                             graph_.nodes_size());
    resolved_.nodes.reserve(graph_.nodes_size());
    if (graph_.nodes_size() > limits_.max_nodes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("nodes: ", graph_.nodes_size(),
                       " nodes exceed the limit ", limits_.max_nodes));
    }
    if (graph_.inputs_size() > limits_.max_inputs) {
      return absl::ResourceExhaustedError(
          absl::StrCat("inputs: ", graph_.inputs_size(),
                       " inputs exceed the limit ", limits_.max_inputs));
    }
    AOTCACHE_RETURN_IF_ERROR(AddInputs());
    AOTCACHE_RETURN_IF_ERROR(AddConstants());
    AOTCACHE_RETURN_IF_ERROR(IndexNodeNames());
    AOTCACHE_RETURN_IF_ERROR(CheckOpsSupported(graph_));
    for (int i = 0; i < graph_.nodes_size(); ++i) {
      AOTCACHE_RETURN_IF_ERROR(AddNode(i));
    }
    if (graph_.outputs_size() == 0 && limits_.require_outputs) {
      return Invalid("outputs", "graph has no outputs");
    }
    for (int i = 0; i < graph_.outputs_size(); ++i) {
      auto where = [&] { return absl::StrCat("outputs[", i, "]"); };
      AOTCACHE_ASSIGN_OR_RETURN(int id, Lookup(where, graph_.outputs(i)));
      resolved_.outputs.push_back(id);
    }
    return std::move(resolved_);
  }

 private:
  absl::Status Define(absl::string_view where, const std::string& name,
                      int value_id) {
    if (name.empty()) return Invalid(where, "empty name");
    if (!names_.emplace(name, value_id).second) {
      return Invalid(where, absl::StrCat("duplicate name ", Quoted(name)));
    }
    return absl::OkStatus();
  }

  absl::Status AddInputs() {
    absl::flat_hash_map<int, int64_t> declared_size;
    for (int i = 0; i < graph_.storages_size(); ++i) {
      const v1::Storage& s = graph_.storages(i);
      std::string where = absl::StrCat("storages[", i, "]");
      if (s.size() < 0) return Invalid(where, "negative size");
      if (s.size() > limits_.max_numel) {
        return absl::ResourceExhaustedError(absl::StrCat(
            where, ": size exceeds the limit ", limits_.max_numel));
      }
      if (!declared_size.emplace(s.id(), s.size()).second) {
        return Invalid(where, absl::StrCat("duplicate storage id ", s.id()));
      }
    }
    absl::flat_hash_map<int, int> canonical;  // Graph storage id -> index.
    std::vector<DType> storage_dtype;
    for (int i = 0; i < graph_.inputs_size(); ++i) {
      const v1::Input& in = graph_.inputs(i);
      std::string where = absl::StrCat("inputs[", i, "] ", Quoted(in.name()));
      AOTCACHE_RETURN_IF_ERROR(
          CheckMeta([&] { return where; }, in.meta(), limits_));
      if (!in.meta().is_leaf() && !in.meta().requires_grad()) {
        return Invalid(where,
                       "is_leaf=false needs requires_grad=true (a tensor "
                       "without autograd history is a leaf)");
      }
      AOTCACHE_RETURN_IF_ERROR(Define(where, in.name(), i));
      Meta meta = MetaFromProto(in.meta());
      int storage;
      if (in.has_storage()) {
        auto size = declared_size.find(in.storage());
        if (size == declared_size.end()) {
          return Invalid(where, absl::StrCat("storage ", in.storage(),
                                             " is not in storages"));
        }
        auto [it, is_new] =
            canonical.emplace(in.storage(), resolved_.storage_size.size());
        if (is_new) {
          resolved_.storage_size.push_back(size->second);
          storage_dtype.push_back(meta.dtype);
        } else if (storage_dtype[it->second] != meta.dtype) {
          return Invalid(where, "inputs sharing a storage must share a dtype");
        }
        storage = it->second;
      } else {
        storage = resolved_.storage_size.size();
        resolved_.storage_size.push_back(meta.StorageExtent());
        storage_dtype.push_back(meta.dtype);
      }
      if (meta.StorageExtent() > resolved_.storage_size[storage]) {
        return Invalid(
            where,
            absl::StrCat("reaches element ", meta.StorageExtent() - 1,
                         " of a storage of ", resolved_.storage_size[storage]));
      }
      resolved_.input_storage.push_back(storage);
      AddValue({ValueInfo::Source::kInput, i, 0, std::move(meta)});
    }
    return absl::OkStatus();
  }

  absl::Status AddConstants() {
    int64_t total_bytes = 0;
    for (int i = 0; i < graph_.constants_size(); ++i) {
      const v1::Constant& c = graph_.constants(i);
      std::string where = absl::StrCat("constants[", i, "] ", Quoted(c.name()));
      AOTCACHE_RETURN_IF_ERROR(
          CheckMeta([&] { return where; }, c.meta(), limits_));
      if (c.meta().requires_grad()) {
        return Invalid(where,
                       "a constant cannot require grad; pass it as an input");
      }
      Meta meta = ContiguousMeta(std::vector<int64_t>(c.meta().shape().begin(),
                                                      c.meta().shape().end()),
                                 c.meta().dtype());
      int64_t bytes = meta.numel() * ItemSize(meta.dtype);
      if (static_cast<int64_t>(c.data().size()) != bytes) {
        return Invalid(where, absl::StrCat("data has ", c.data().size(),
                                           " bytes, expected ", bytes));
      }
      // Kernels read bools as C++ bool: any other byte is no value.
      if (meta.dtype == v1::DTYPE_BOOL &&
          c.data().find_first_not_of(std::string("\0\1", 2)) !=
              std::string::npos) {
        return Invalid(where, "bool data holds bytes other than 0 and 1");
      }
      total_bytes += bytes;
      if (total_bytes > limits_.max_constant_bytes) {
        return absl::ResourceExhaustedError(
            absl::StrCat(where, ": constants exceed ",
                         limits_.max_constant_bytes, " bytes"));
      }
      AOTCACHE_RETURN_IF_ERROR(
          Define(where, c.name(), static_cast<int>(resolved_.values.size())));
      AddValue({ValueInfo::Source::kConstant, i, 0, std::move(meta)});
    }
    return absl::OkStatus();
  }

  // Records each node's position so a reference to a later node can be told
  // apart from one to nothing.
  absl::Status IndexNodeNames() {
    for (int i = 0; i < graph_.nodes_size(); ++i) {
      const std::string& name = graph_.nodes(i).name();
      if (name.empty()) return Invalid(NodeWhere(graph_, i), "empty name");
      if (names_.contains(name) || !node_position_.emplace(name, i).second) {
        return Invalid(NodeWhere(graph_, i),
                       absl::StrCat("duplicate name ", Quoted(name)));
      }
    }
    return absl::OkStatus();
  }

  // Resolves a reference to an input, a constant or an earlier node.
  absl::StatusOr<int> Lookup(Where where, const std::string& name) {
    auto it = names_.find(name);
    if (it != names_.end()) {
      if (it->second == kMultiResult) {
        return Invalid(where(), absl::StrCat(Quoted(name),
                                             " has several results; read one "
                                             "with getitem"));
      }
      return it->second;
    }
    auto later = node_position_.find(name);
    if (later != node_position_.end()) {
      return Invalid(
          where(),
          absl::StrCat(Quoted(name), " is used before it is defined (nodes[",
                       later->second,
                       "]): a cycle, or nodes not in topological order"));
    }
    return Invalid(where(), absl::StrCat(Quoted(name), " is not defined"));
  }

  absl::Status AddGetItem(int i) {
    const v1::Node& node = graph_.nodes(i);
    auto where = [&] { return NodeWhere(graph_, i); };
    if (node.args_size() != 2 ||
        node.args(0).value_case() != v1::Argument::kNode ||
        node.args(1).value_case() != v1::Argument::kInt ||
        node.kwargs_size() != 0) {
      return Invalid(where(), "getitem takes (node, int)");
    }
    auto source = multi_results_.find(node.args(0).node());
    if (source == multi_results_.end()) {
      AOTCACHE_RETURN_IF_ERROR(Lookup(where, node.args(0).node()).status());
      return Invalid(where(), absl::StrCat(Quoted(node.args(0).node()),
                                           " has a single result"));
    }
    int64_t index = node.args(1).int_();
    const std::vector<int>& results = source->second;
    if (index < 0 || index >= static_cast<int64_t>(results.size())) {
      return Invalid(where(),
                     absl::StrCat("index ", index, " out of range for ",
                                  results.size(), " results"));
    }
    names_.emplace(node.name(), results[index]);
    return CheckDeclared(where, node, {resolved_.values[results[index]].meta},
                         OpEffect::kFunctional);
  }

  absl::Status CheckDeclared(Where where, const v1::Node& node,
                             const std::vector<Meta>& inferred,
                             OpEffect effect) {
    if (node.output_meta_size() == 0) return absl::OkStatus();
    if (node.output_meta_size() != static_cast<int>(inferred.size())) {
      return Invalid(
          where(), absl::StrCat("output_meta has ", node.output_meta_size(),
                                " entries for ", inferred.size(), " results"));
    }
    for (size_t r = 0; r < inferred.size(); ++r) {
      const v1::TensorMeta& declared = node.output_meta(r);
      auto here = [&] {
        return absl::StrCat(where(), " output_meta[", r, "]");
      };
      AOTCACHE_RETURN_IF_ERROR(CheckMeta(here, declared, limits_));
      Meta d = MetaFromProto(declared);
      if (d.shape != inferred[r].shape || d.dtype != inferred[r].dtype) {
        return Invalid(
            here(),
            absl::StrCat("declared shape [", absl::StrJoin(d.shape, ", "), "] ",
                         DTypeName(d.dtype), " contradicts inferred [",
                         absl::StrJoin(inferred[r].shape, ", "), "] ",
                         DTypeName(inferred[r].dtype)));
      }
      bool aliases = effect != OpEffect::kFunctional;
      if (aliases && declared.stride_size() > 0 &&
          (d.stride != inferred[r].stride || d.offset != inferred[r].offset)) {
        return Invalid(here(),
                       "declared strides or offset contradict the view");
      }
    }
    return absl::OkStatus();
  }

  absl::Status AddNode(int i) {
    const v1::Node& node = graph_.nodes(i);
    auto where = [&] { return NodeWhere(graph_, i); };
    if (IsGetItem(node.op())) return AddGetItem(i);
    const OpInfo* op = OpRegistry::Get().Find(node.op());  // Checked above.
    if (node.grad_mode() != v1::GRAD_MODE_ENABLED &&
        node.grad_mode() != v1::GRAD_MODE_DISABLED) {
      return Invalid(where(),
                     "grad_mode must be set (GRAD_MODE_ENABLED or "
                     "GRAD_MODE_DISABLED)");
    }
    if (node.args_size() + node.kwargs_size() > limits_.max_args_per_node) {
      return absl::ResourceExhaustedError(
          absl::StrCat(where(), ": too many arguments"));
    }
    const std::vector<ArgSchema>& schema = op->schema.args;
    int num_positional = 0;
    while (num_positional < static_cast<int>(schema.size()) &&
           !schema[num_positional].kwarg_only) {
      ++num_positional;
    }
    if (node.args_size() > num_positional) {
      return Invalid(where(), absl::StrCat("takes at most ", num_positional,
                                           " positional arguments, got ",
                                           node.args_size()));
    }
    for (const auto& [name, value] : node.kwargs()) {
      bool known = false;
      for (size_t k = 0; k < schema.size(); ++k) {
        if (schema[k].name != name) continue;
        known = true;
        if (static_cast<int>(k) < node.args_size()) {
          return Invalid(
              where(), absl::StrCat("argument ", Quoted(name), " given twice"));
        }
      }
      if (!known) {
        return Invalid(where(),
                       absl::StrCat("unknown keyword argument ", Quoted(name)));
      }
    }
    ResolvedNode resolved;
    resolved.op = op;
    resolved.grad_enabled = node.grad_mode() == v1::GRAD_MODE_ENABLED;
    resolved.proto_index = i;
    auto lookup = [this](const std::string& name, Where at) {
      return Lookup(at, name);
    };
    for (size_t k = 0; k < schema.size(); ++k) {
      const v1::Argument* given = nullptr;
      if (static_cast<int>(k) < node.args_size()) {
        given = &node.args(k);
      } else if (auto it = node.kwargs().find(schema[k].name);
                 it != node.kwargs().end()) {
        given = &it->second;
      }
      if (given != nullptr) {
        AOTCACHE_ASSIGN_OR_RETURN(
            BoundArg b, BindArgument(schema[k], *given, lookup, where));
        resolved.args.push_back(std::move(b));
      } else if (schema[k].default_value.has_value()) {
        resolved.args.push_back(DefaultArgument(schema[k]));
      } else {
        return Invalid(where(),
                       absl::StrCat("missing argument '", schema[k].name, "'"));
      }
    }
    // The first tensor argument of an aliasing op must be a tensor.
    if (op->effect != OpEffect::kFunctional && !resolved.args[0].is_tensor()) {
      return Invalid(where(), absl::StrCat("argument '", schema[0].name,
                                           "' must be a tensor"));
    }
    for (size_t k = 0; k < schema.size(); ++k) {
      if (schema[k].type == ArgType::kTensor && resolved.args[k].is_number() &&
          (k == 0 || !AcceptsNumberOperands(*op))) {
        return Invalid(where(), absl::StrCat("argument '", schema[k].name,
                                             "' must be a tensor"));
      }
    }
    if (op->decompose != nullptr) return AddDecomposed(i, std::move(resolved));
    AOTCACHE_ASSIGN_OR_RETURN(std::vector<int> results,
                              AddResolved(std::move(resolved), &node));
    if (results.size() == 1) {
      names_.emplace(node.name(), results[0]);
    } else {
      names_.emplace(node.name(), kMultiResult);
      multi_results_.emplace(node.name(), std::move(results));
    }
    return absl::OkStatus();
  }

  // Infers the results of a bound node and adds it; `declared` is the
  // client's node, whose output_meta is checked (null for nodes a
  // decomposition emits). Returns the results' value ids.
  absl::StatusOr<std::vector<int>> AddResolved(ResolvedNode resolved,
                                               const v1::Node* declared) {
    const OpInfo* op = resolved.op;
    const int i = resolved.proto_index;
    auto where = [&] { return NodeWhere(graph_, i); };
    if (static_cast<int64_t>(resolved_.nodes.size()) >= limits_.max_nodes) {
      return absl::ResourceExhaustedError(
          absl::StrCat(where(), ": decomposes past the limit of ",
                       limits_.max_nodes, " nodes"));
    }
    auto meta_of = [this](int id) -> const Meta& {
      return resolved_.values[id].meta;
    };
    InferContext ctx(op->schema, resolved.args, meta_of);
    absl::StatusOr<std::vector<Meta>> inferred = op->infer(ctx);
    if (!inferred.ok()) return Invalid(where(), inferred.status().message());
    for (Meta& m : *inferred) {
      int64_t numel = 1;
      for (int64_t s : m.shape) {
        if (__builtin_mul_overflow(numel, s, &numel) ||
            numel > limits_.max_numel) {
          return absl::ResourceExhaustedError(absl::StrCat(
              where(), ": result exceeds ", limits_.max_numel, " elements"));
        }
      }
      if (op->effect == OpEffect::kFunctional) {
        m.offset = 0;  // Fresh memory.
      }
    }
    if (declared != nullptr) {
      const v1::Node& node = *declared;
      AOTCACHE_RETURN_IF_ERROR(
          CheckDeclared(where, node, *inferred, op->effect));
      // A fresh result may have the layout make_fx saw (clone keeps strides).
      if (op->effect == OpEffect::kFunctional) {
        for (int r = 0; r < node.output_meta_size(); ++r) {
          if (node.output_meta(r).stride_size() > 0) {
            (*inferred)[r].stride.assign(node.output_meta(r).stride().begin(),
                                         node.output_meta(r).stride().end());
          }
        }
      }
    }
    int node_index = static_cast<int>(resolved_.nodes.size());
    for (size_t r = 0; r < inferred->size(); ++r) {
      resolved.results.push_back(static_cast<int>(resolved_.values.size()));
      AddValue({ValueInfo::Source::kNode, node_index, static_cast<int>(r),
                (*inferred)[r]});
    }
    std::vector<int> results = resolved.results;
    resolved_.nodes.push_back(std::move(resolved));
    return results;
  }

  // A node whose op validation rewrites (decompositions.h): the ops its
  // decomposition emits stand in the graph for it, their results for its.
  class NodeDecomposer : public Decomposer {
   public:
    NodeDecomposer(Resolver* r, const ResolvedNode& node)
        : r_(r), node_(node) {}
    const BoundArg& arg(int i) const override { return node_.args[i]; }
    Meta meta(int value) const override {
      return r_->resolved_.values[value].meta;
    }
    std::optional<Meta> declared(int r) const override {
      const v1::Node& proto = r_->graph_.nodes(node_.proto_index);
      // A bad one is reported with the node's results (CheckDeclared).
      if (r >= proto.output_meta_size() ||
          !CheckMeta([] { return std::string(); }, proto.output_meta(r),
                     r_->limits_)
               .ok()) {
        return std::nullopt;
      }
      return MetaFromProto(proto.output_meta(r));
    }
    absl::StatusOr<std::vector<int>> Emit(absl::string_view op,
                                          std::vector<BoundArg> args) override {
      ResolvedNode emitted;
      emitted.op = OpRegistry::Get().Find(op);
      if (emitted.op == nullptr || emitted.op->decompose != nullptr) {
        return absl::InternalError(
            absl::StrCat("a decomposition emits unknown op ", op));
      }
      emitted.args = std::move(args);
      emitted.grad_enabled = node_.grad_enabled && !grad_disabled_;
      emitted.proto_index = node_.proto_index;
      absl::StatusOr<std::vector<int>> results =
          r_->AddResolved(std::move(emitted), nullptr);
      emit_failed_ |= !results.ok();
      return results;
    }
    // Whether an error came from an emitted op (it names the node already).
    bool emit_failed() const { return emit_failed_; }

   private:
    Resolver* r_;
    const ResolvedNode& node_;
    bool emit_failed_ = false;
  };

  absl::Status AddDecomposed(int i, ResolvedNode node) {
    const v1::Node& proto = graph_.nodes(i);
    auto where = [&] { return NodeWhere(graph_, i); };
    NodeDecomposer decomposer(this, node);
    absl::StatusOr<std::vector<int>> results = node.op->decompose(decomposer);
    if (!results.ok()) {
      if (decomposer.emit_failed()) return results.status();
      return Invalid(where(), results.status().message());
    }
    std::vector<Meta> metas;
    for (int v : *results) metas.push_back(resolved_.values[v].meta);
    AOTCACHE_RETURN_IF_ERROR(
        CheckDeclared(where, proto, metas, OpEffect::kFunctional));
    if (node.op->schema.returns[0].is_list ||
        node.op->schema.returns.size() > 1) {
      names_.emplace(proto.name(), kMultiResult);
      multi_results_.emplace(proto.name(), *std::move(results));
    } else {
      names_.emplace(proto.name(), (*results)[0]);
    }
    return absl::OkStatus();
  }

  // Ops whose non-self tensor operands may be Python numbers (x * 2).
  static bool AcceptsNumberOperands(const OpInfo& op) {
    return op.infer == infer::Elementwise ||
           op.infer == infer::ElementwiseFloat ||
           op.infer == infer::Comparison || op.infer == infer::InPlace ||
           op.infer == infer::Where;
  }

  void AddValue(ValueInfo value) {
    resolved_.values.push_back(std::move(value));
  }

  static constexpr int kMultiResult = -1;

  const v1::Graph& graph_;
  const GraphLimits& limits_;
  ResolvedGraph resolved_;
  // Keys point into graph_, which outlives the resolver.
  absl::flat_hash_map<absl::string_view, int> names_;  // Name -> value id.
  absl::flat_hash_map<absl::string_view, int> node_position_;
  absl::flat_hash_map<absl::string_view, std::vector<int>> multi_results_;
};

}  // namespace

absl::StatusOr<ResolvedGraph> ValidateGraph(const v1::Graph& graph,
                                            const GraphLimits& limits) {
  return Resolver(graph, limits).Run();
}

}  // namespace aotcache
