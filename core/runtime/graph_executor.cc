#include "core/runtime/graph_executor.h"

#include <algorithm>
#include <cstring>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/elementwise_layout.h"
#include "core/graph/validate.h"
#include "core/runtime/strided.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

Tensor NumberTensor(double v) {
  Tensor t = Tensor::Contiguous({}, v1::DTYPE_FLOAT64);
  *reinterpret_cast<double*>(t.storage_data()) = v;
  return t;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GraphExecutor>> GraphExecutor::Create(
    v1::Graph graph) {
  std::unique_ptr<GraphExecutor> e(new GraphExecutor());
  e->graph_ = std::make_unique<v1::Graph>(std::move(graph));
  AOTCACHE_ASSIGN_OR_RETURN(e->resolved_,
                            ValidateGraph(*e->graph_, InternalGraphLimits()));
  for (const ResolvedNode& node : e->resolved_.nodes) {
    const OpInfo& op = *node.op;
    Kernel kernel = FindKernel(op.qualified_name);
    bool write_back = false;
    if (op.resizes_self) {
      // Its functional form, resize, is what a functional graph holds.
      return absl::InvalidArgumentError(absl::StrCat(
          "no kernel for ", op.qualified_name, " (an unfunctionalized graph)"));
    }
    if (kernel == nullptr && op.effect == OpEffect::kInPlace) {
      kernel = FindKernel(op.functional_counterpart);
      write_back = true;
    } else if (kernel == nullptr && op.effect == OpEffect::kInPlaceMetadata) {
      kernel = FindKernel(op.functional_counterpart);  // A view op.
    }
    if (kernel == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("no kernel for ", op.qualified_name));
    }
    e->kernels_.push_back(kernel);
    e->write_back_.push_back(write_back);
    std::vector<Meta> result_metas;
    for (int v : node.results)
      result_metas.push_back(e->resolved_.values[v].meta);
    if (write_back) {
      // Computed fresh, then written into self.
      result_metas[0] =
          ContiguousMeta(result_metas[0].shape, result_metas[0].dtype);
    }
    e->result_metas_.push_back(std::move(result_metas));
    std::vector<Tensor> numbers(node.args.size());
    for (size_t k = 0; k < node.args.size(); ++k) {
      const BoundArg& a = node.args[k];
      const ArgType type = op.schema.args[k].type;
      if (a.is_number() &&
          (type == ArgType::kTensor || type == ArgType::kScalar)) {
        numbers[k] = NumberTensor(a.AsDouble());
      }
    }
    e->number_args_.push_back(std::move(numbers));
  }
  for (int c = 0; c < e->graph_->constants_size(); ++c) {
    const v1::Constant& proto = e->graph_->constants(c);
    const Meta& meta = e->resolved_.values[e->resolved_.ConstantValue(c)].meta;
    Tensor t = Tensor::Zeros(meta);
    std::memcpy(t.storage_data(), proto.data().data(), proto.data().size());
    e->constants_.push_back(std::move(t));
  }
  return e;
}

absl::StatusOr<std::unique_ptr<GraphExecutor>> GraphExecutor::Create(
    const v1::ReferenceProgram& program) {
  AOTCACHE_ASSIGN_OR_RETURN(std::unique_ptr<GraphExecutor> e,
                            Create(program.graph()));
  size_t results = 0;
  for (const ResolvedNode& node : e->resolved_.nodes)
    results += node.results.size();
  if (program.result_slot_size() != static_cast<int>(results)) {
    return absl::InvalidArgumentError("buffer plan does not match the graph");
  }
  e->result_slot_.assign(program.result_slot().begin(),
                         program.result_slot().end());
  e->slot_bytes_.assign(program.slot_bytes().begin(),
                        program.slot_bytes().end());
  size_t flat = 0;
  for (const ResolvedNode& node : e->resolved_.nodes) {
    for (int v : node.results) {
      int slot = e->result_slot_[flat++];
      if (slot < -1 || slot >= static_cast<int>(e->slot_bytes_.size())) {
        return absl::InvalidArgumentError("buffer plan names an unknown slot");
      }
      const Meta& m = e->resolved_.values[v].meta;
      if (slot >= 0 &&
          m.StorageExtent() * ItemSize(m.dtype) > e->slot_bytes_[slot]) {
        return absl::InvalidArgumentError("buffer plan slot too small");
      }
    }
  }
  return e;
}

absl::StatusOr<std::unique_ptr<GraphExecutor>> GraphExecutor::Create(
    const v1::ReferenceProgram& program, std::vector<FusedKernel> fused) {
  AOTCACHE_ASSIGN_OR_RETURN(std::unique_ptr<GraphExecutor> e, Create(program));
  const ResolvedGraph& g = e->resolved_;
  e->fused_role_.assign(g.nodes.size(), kNotFused);
  std::vector<int> group_of_value(g.values.size(), -1);
  std::vector<int> group_of_node(g.nodes.size(), -1);
  // Per value made by a node: that node, and its index in result_slot_.
  std::vector<int> maker(g.values.size(), -1), flat_of_value(g.values.size());
  for (size_t n = 0, flat = 0; n < g.nodes.size(); ++n) {
    for (int v : g.nodes[n].results) {
      maker[v] = static_cast<int>(n);
      flat_of_value[v] = static_cast<int>(flat++);
    }
  }
  e->fused_output_results_.resize(fused.size());
  for (size_t k = 0; k < fused.size(); ++k) {
    const FusedKernel& f = fused[k];
    if (f.fn == nullptr || f.nodes.empty() || f.outputs.empty()) {
      return absl::InvalidArgumentError("a fused kernel without a function");
    }
    const int sink = f.nodes.back();
    for (int n : f.nodes) {
      if (n < 0 || n >= static_cast<int>(g.nodes.size()) ||
          e->fused_role_[n] != kNotFused) {
        return absl::InvalidArgumentError("a fused kernel's nodes overlap");
      }
      e->fused_role_[n] = kInsideFused;
      group_of_node[n] = static_cast<int>(k);
      for (int v : g.nodes[n].results) group_of_value[v] = static_cast<int>(k);
    }
    for (int v : f.outputs) {
      if (v < 0 || v >= static_cast<int>(g.values.size()) ||
          group_of_value[v] != static_cast<int>(k) ||
          std::count(f.outputs.begin(), f.outputs.end(), v) != 1) {
        return absl::InvalidArgumentError(
            "a fused kernel's outputs are not its nodes' results");
      }
      e->fused_output_results_[k].push_back(flat_of_value[v]);
    }
    e->fused_role_[sink] = static_cast<int>(k);
    const Meta& out = g.values[f.outputs[0]].meta;
    for (int v : f.inputs) {
      // Made before the kernel runs, outside it.
      if (v < 0 || v >= static_cast<int>(g.values.size()) ||
          group_of_value[v] == static_cast<int>(k) || maker[v] >= sink) {
        return absl::InvalidArgumentError(absl::StrCat(
            "fused kernel ", k, " reads a value not made before it runs"));
      }
      // A kernel generated for its operands' layouts takes them as the
      // graph says they are (Run checks the inputs against the graph).
      if (f.any_layout) continue;
      const Meta& m = g.values[v].meta;
      bool scalar_like = m.numel() == 1;
      if (!scalar_like) {
        scalar_like = true;
        for (int64_t s : m.stride) scalar_like &= s == 0;
      }
      // An elementwise loop reads in[i] and writes out[i] for i < numel:
      // dense operands and output, in one order of the dims (the kernel's
      // business), or one element.
      const bool elementwise_ok = NonOverlappingAndDense(out) &&
                                  (scalar_like || (m.numel() == out.numel() &&
                                                   NonOverlappingAndDense(m)));
      if (!elementwise_ok) {
        return absl::InvalidArgumentError(absl::StrCat(
            "fused kernel ", k, " (ending at node '",
            e->graph_->nodes(g.nodes[sink].proto_index).name(),
            "'): an operand of shape [", absl::StrJoin(m.shape, ","),
            "] strides [", absl::StrJoin(m.stride, ","),
            "] does not fit its output of shape [",
            absl::StrJoin(out.shape, ","), "]"));
      }
    }
  }
  // Only a group's output may be read outside it.
  auto read_outside = [&](int v, int reader_group) {
    int owner = group_of_value[v];
    if (owner < 0 || owner == reader_group) return false;
    const std::vector<int>& outputs = fused[owner].outputs;
    return std::find(outputs.begin(), outputs.end(), v) == outputs.end();
  };
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    for (const BoundArg& a : g.nodes[n].args) {
      for (int v : a.values) {
        if (read_outside(v, group_of_node[n])) {
          return absl::InvalidArgumentError(
              "a fused kernel's inner value is read outside it");
        }
        // An output is read after its kernel ran.
        const int owner = group_of_value[v];
        if (owner >= 0 && owner != group_of_node[n] &&
            static_cast<int>(n) < fused[owner].nodes.back()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "fused kernel ", owner, "'s output is read before it runs"));
        }
      }
    }
  }
  // And by the kernels: another kernel's output, once that kernel ran.
  for (size_t k = 0; k < fused.size(); ++k) {
    for (int v : fused[k].inputs) {
      const int owner = group_of_value[v];
      if (owner >= 0 && fused[owner].nodes.back() >= fused[k].nodes.back()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "fused kernel ", owner, "'s output is read before it runs"));
      }
    }
  }
  for (int v : g.outputs) {
    if (read_outside(v, -1)) {
      return absl::InvalidArgumentError(
          "a fused kernel's inner value is an output");
    }
  }
  e->fused_ = std::move(fused);
  return e;
}

GraphExecutor::Arenas GraphExecutor::TakeArenas() const {
  {
    absl::MutexLock lock(&arenas_mu_);
    if (!spare_arenas_.empty()) {
      Arenas arenas = std::move(spare_arenas_.back());
      spare_arenas_.pop_back();
      return arenas;
    }
  }
  Arenas arenas;
  for (int64_t bytes : slot_bytes_) {
    arenas.push_back(AllocateAligned(bytes));
  }
  return arenas;
}

absl::StatusOr<std::vector<Tensor>> GraphExecutor::Run(
    const std::vector<Tensor>& inputs, uint64_t seed) const {
  const ResolvedGraph& g = resolved_;
  if (static_cast<int>(inputs.size()) != g.num_inputs()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected ", g.num_inputs(), " inputs, got ", inputs.size()));
  }
  std::vector<Tensor> values(g.values.size());
  for (int i = 0; i < g.num_inputs(); ++i) {
    if (inputs[i].meta() != g.values[i].meta) {
      return absl::InvalidArgumentError(
          absl::StrCat("inputs[", i, "] '", graph_->inputs(i).name(),
                       "': layout differs from the graph's input meta"));
    }
    if (inputs[i].meta().StorageExtent() > inputs[i].storage_elements()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "inputs[", i, "] '", graph_->inputs(i).name(), "': reaches element ",
          inputs[i].meta().StorageExtent() - 1, " of a storage of ",
          inputs[i].storage_elements(), " elements"));
    }
    values[i] = inputs[i];
  }
  for (int c = 0; c < g.num_constants(); ++c) {
    values[g.ConstantValue(c)] = constants_[c];
  }
  // Nothing a Run returns lies in its arenas (the plan gives outputs
  // memory of their own), so they are free for the next Run.
  Arenas arenas = TakeArenas();
  absl::Cleanup give_back = [&] {
    absl::MutexLock lock(&arenas_mu_);
    spare_arenas_.push_back(std::move(arenas));
  };
  size_t flat_result = 0;
  std::vector<const void*> in;  // A fused kernel's arguments, reused.
  std::vector<void*> out;
  KernelArgs args;  // Another node's arguments, reused.
  args.seed = seed;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ResolvedNode& node = g.nodes[n];
    if (!fused_role_.empty() && fused_role_[n] != kNotFused) {
      if (fused_role_[n] >= 0) {
        const FusedKernel& f = fused_[fused_role_[n]];
        out.clear();
        const std::vector<int>& results = fused_output_results_[fused_role_[n]];
        for (size_t r = 0; r < f.outputs.size(); ++r) {
          const Meta& m = g.values[f.outputs[r]].meta;
          int slot = result_slot_.empty() ? -1 : result_slot_[results[r]];
          Tensor t = slot >= 0 ? Tensor::Borrow(arenas[slot].get(),
                                                m.StorageExtent(), m)
                               : Tensor::Uninitialized(m);
          out.push_back(t.storage_data() + m.offset * ItemSize(m.dtype));
          values[f.outputs[r]] = std::move(t);
        }
        in.clear();
        for (int v : f.inputs) {
          const Tensor& t = values[v];
          in.push_back(t.storage_data() +
                       t.meta().offset * ItemSize(t.dtype()));
        }
        f.fn(in.data(), out.data(), g.values[f.outputs[0]].meta.numel());
      }
      flat_result += node.results.size();
      continue;
    }
    args.node = &node;
    args.stream = static_cast<uint32_t>(n);
    args.tensors.assign(node.args.size(), nullptr);
    args.lists.resize(node.args.size());
    const std::vector<Tensor>& numbers = number_args_[n];
    for (size_t k = 0; k < node.args.size(); ++k) {
      const BoundArg& a = node.args[k];
      args.lists[k].clear();
      if (a.kind == BoundArg::Kind::kTensor) {
        args.tensors[k] = &values[a.values[0]];
      } else if (a.kind == BoundArg::Kind::kTensorList) {
        for (int v : a.values) args.lists[k].push_back(values[v]);
      } else if (numbers[k].defined()) {
        args.tensors[k] = &numbers[k];
      }
    }
    const std::vector<Meta>& result_metas = result_metas_[n];
    args.result_metas = &result_metas;
    args.preallocated.assign(result_metas.size(), Tensor());
    if (!result_slot_.empty()) {
      for (size_t r = 0; r < result_metas.size(); ++r) {
        int slot = result_slot_[flat_result + r];
        if (slot < 0 || write_back_[n]) continue;
        const Meta& m = result_metas[r];
        std::memset(arenas[slot].get(), 0,
                    m.StorageExtent() * ItemSize(m.dtype));
        args.preallocated[r] =
            Tensor::Borrow(arenas[slot].get(), m.StorageExtent(), m);
      }
    }
    flat_result += result_metas.size();
    AOTCACHE_ASSIGN_OR_RETURN(std::vector<Tensor> results, kernels_[n](args));
    if (write_back_[n]) {
      CopyInto(results[0], *args.tensors[0]);
      results[0] = *args.tensors[0];
    }
    for (size_t r = 0; r < node.results.size(); ++r) {
      values[node.results[r]] = std::move(results[r]);
    }
  }
  std::vector<Tensor> outputs;
  for (int v : g.outputs) outputs.push_back(values[v]);
  return outputs;
}

}  // namespace aotcache
