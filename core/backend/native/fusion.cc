#include "core/backend/native/fusion.h"

#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/backend/native/kernel_patterns.h"
#include "core/backend/native/kernel_source.h"
#include "core/backend/native/own_kernels.h"
#include "core/graph/elementwise_layout.h"

namespace aotcache {
namespace {

// `m`'s shape broadcasts to `shape` (right-aligned, each dim equal or 1).
bool Broadcasts(const Meta& m, const std::vector<int64_t>& shape) {
  if (m.dim() > static_cast<int64_t>(shape.size())) return false;
  const size_t lead = shape.size() - m.shape.size();
  for (size_t d = 0; d < m.shape.size(); ++d) {
    if (m.shape[d] != shape[lead + d] && m.shape[d] != 1) return false;
  }
  return true;
}

// A formula node with an operand read through strides (broadcast, or of
// another layout), not at i or at its one element.
bool HasStridedOperand(const ResolvedGraph& g, const ResolvedNode& node) {
  const Formula* f = FormulaOf(node);
  if (f == nullptr) return false;
  const Meta& out = g.values[node.results[0]].meta;
  for (int k = 0; k < f->arity; ++k) {
    const BoundArg& a = node.args[k];
    if (a.kind != BoundArg::Kind::kTensor) continue;
    const Meta& m = g.values[a.values[0]].meta;
    if (!ScalarLike(m) && !Aligned(m, out)) return true;
  }
  return false;
}

// The node computes elementwise over float or bool operands that broadcast
// to its result's shape (any layout), or plain numbers; a comparison's
// result is bool, any other's floating.
bool Fusible(const ResolvedGraph& g, const ResolvedNode& node) {
  if (ReductionOf(g, node).has_value()) return true;
  const Formula* f = FormulaOf(node);
  if (f == nullptr || node.results.size() != 1 ||
      (f->value_arg >= 0 && !node.args[f->value_arg].is_number())) {
    return false;
  }
  const Meta& out = g.values[node.results[0]].meta;
  const bool compare = f->operands == Formula::Operands::kAsDouble;
  // Dense, in any order of the dims (eager's layout of the result).
  if ((compare ? out.dtype != v1::DTYPE_BOOL : !IsFloating(out.dtype)) ||
      !NonOverlappingAndDense(out) || out.offset != 0) {
    return false;
  }
  for (int k = 0; k < f->arity; ++k) {
    const BoundArg& a = node.args[k];
    if (a.is_number()) continue;
    if (a.kind != BoundArg::Kind::kTensor) return false;
    const Meta& m = g.values[a.values[0]].meta;
    if (!IsFloating(m.dtype) && m.dtype != v1::DTYPE_BOOL) return false;
    if (!ScalarLike(m) && !Broadcasts(m, out.shape)) return false;
  }
  return true;
}

// The most nodes one loop computes. The host compiler's time grows faster
// than a function's length: a chain of 20,000 adds in one loop took GCC
// about 45 s at -O3, in loops of this many a few seconds; a loop this long
// already spends its time computing, not loading and storing.
constexpr int kMaxGroupNodes = 256;

}  // namespace

std::vector<FusedGroup> FindFusedGroups(const ResolvedGraph& g) {
  // Union-find over nodes: a fusible producer joins the group of its
  // consumers when they are all fusible and in one group (first the single
  // readers, then, to a fixed point, values read several times in a group).
  std::vector<int> parent(g.nodes.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  // The nodes with kernels of their own kind: one group each, with the
  // node it absorbs, which no loop then takes.
  std::vector<FusedGroup> own_groups;
  std::vector<bool> absorbed(g.nodes.size(), false);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (std::optional<FusedGroup> own =
            OwnKernelGroup(g, static_cast<int>(n))) {
      for (int m : own->nodes) {
        if (m != static_cast<int>(n)) absorbed[m] = true;
      }
      own_groups.push_back(*std::move(own));
    }
  }
  std::vector<bool> fusible(g.nodes.size());
  std::vector<std::vector<int>> readers(g.values.size());
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    fusible[n] = !absorbed[n] && Fusible(g, g.nodes[n]);
    for (const BoundArg& a : g.nodes[n].args) {
      for (int v : a.values) readers[v].push_back(static_cast<int>(n));
    }
  }
  std::vector<bool> is_output(g.values.size(), false);
  for (int v : g.outputs) is_output[v] = true;
  // Per node, and per group root: whether it reduces, or reads an operand
  // through strides. The two do not mix in a group (a reduction's loop
  // reads at i).
  std::vector<bool> reduction(g.nodes.size()), strided(g.nodes.size());
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    reduction[n] = fusible[n] && ReductionOf(g, g.nodes[n]).has_value();
    strided[n] = fusible[n] && HasStridedOperand(g, g.nodes[n]);
  }
  std::vector<bool> group_reduces = reduction, group_strided = strided;
  std::vector<int> group_size(g.nodes.size(), 1);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t p = 0; p < g.nodes.size(); ++p) {
      const int v = g.nodes[p].results[0];
      if (!fusible[p] || is_output[v] || readers[v].empty() || reduction[p]) {
        continue;  // A reduction ends its group.
      }
      const int group = find(readers[v][0]);
      const int own = find(static_cast<int>(p));
      bool joins = own != group &&
                   group_size[own] + group_size[group] <= kMaxGroupNodes &&
                   !((group_strided[own] || group_strided[group]) &&
                     (group_reduces[own] || group_reduces[group]));
      // Every reader in that group, reading v at i: as the reduced input,
      // as an operand of its own shape, or v is a scalar.
      const Meta& m = g.values[v].meta;
      for (int r : readers[v]) {
        joins &= fusible[r] && find(r) == group &&
                 (reduction[r] || ScalarLike(m) ||
                  Aligned(m, g.values[g.nodes[r].results[0]].meta));
      }
      if (joins) {
        parent[own] = group;
        group_reduces[group] = group_reduces[group] || group_reduces[own];
        group_strided[group] = group_strided[group] || group_strided[own];
        group_size[group] += group_size[own];
        changed = true;
      }
    }
  }
  std::map<int, FusedGroup> by_root;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (fusible[n]) by_root[find(static_cast<int>(n))].nodes.push_back(n);
  }
  std::vector<FusedGroup> groups;
  for (auto& [root, group] : by_root) {
    if (group.nodes.empty()) continue;
    group.outputs = {g.nodes[group.nodes.back()].results[0]};
    group.reduction = ReductionOf(g, g.nodes[group.nodes.back()]).has_value();
    group.strided = group_strided[root];
    std::vector<bool> inside(g.values.size(), false);
    for (int n : group.nodes) inside[g.nodes[n].results[0]] = true;
    for (int n : group.nodes) {
      // The values the loop reads: a formula's operands (not, say, the
      // tensor zeros_like takes its shape from), or the reduced input.
      const Formula* f = FormulaOf(g.nodes[n]);
      const int read = f != nullptr ? f->arity : 1;
      for (int k = 0; k < read; ++k) {
        const BoundArg& a = g.nodes[n].args[k];
        if (a.kind != BoundArg::Kind::kTensor || inside[a.values[0]]) continue;
        bool seen = false;
        for (int v : group.inputs) seen |= v == a.values[0];
        if (!seen) group.inputs.push_back(a.values[0]);
      }
    }
    groups.push_back(std::move(group));
  }
  // A batch norm backward absorbs the loop that alone makes its gradient
  // (the ReLU's backward before it), reading the loop's operands at i.
  for (FusedGroup& own : own_groups) {
    const ResolvedNode& node = g.nodes[own.nodes.back()];
    std::optional<BatchNormShape> bn = BatchNormOf(g, node);
    if (!bn.has_value() || bn->kind != BatchNormShape::Kind::kBackward) {
      continue;
    }
    const int grad = node.args[0].values[0];
    if (is_output[grad] || readers[grad].size() != 1) continue;
    for (size_t k = 0; k < groups.size(); ++k) {
      FusedGroup& loop = groups[k];
      if (loop.outputs[0] != grad || loop.reduction || loop.strided ||
          loop.inputs.empty()) {
        continue;
      }
      own.nodes.insert(own.nodes.begin(), loop.nodes.begin(), loop.nodes.end());
      own.gradient_inputs = static_cast<int>(loop.inputs.size());
      // The batch norm's operands but its gradient, the first.
      loop.inputs.insert(loop.inputs.end(), own.inputs.begin() + 1,
                         own.inputs.end());
      own.inputs = std::move(loop.inputs);
      groups.erase(groups.begin() + k);
      break;
    }
  }
  for (FusedGroup& own : own_groups) groups.push_back(std::move(own));
  return groups;
}

}  // namespace aotcache
