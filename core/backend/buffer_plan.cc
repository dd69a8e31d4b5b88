#include "core/backend/buffer_plan.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "core/graph/validate.h"
#include "core/status_macros.h"

namespace aotcache {

absl::StatusOr<v1::ReferenceProgram> PlanBuffers(
    v1::Graph graph, const std::vector<int>* run_at) {
  AOTCACHE_ASSIGN_OR_RETURN(ResolvedGraph g,
                            ValidateGraph(graph, InternalGraphLimits()));
  std::vector<int> turn(g.nodes.size());
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    turn[n] = run_at != nullptr ? (*run_at)[n] : static_cast<int>(n);
  }
  const int num_values = static_cast<int>(g.values.size());
  constexpr int kForever = std::numeric_limits<int>::max();
  // The value whose memory each value uses, and when that memory is free.
  std::vector<int> owner(num_values);
  for (int v = 0; v < num_values; ++v) owner[v] = v;
  std::vector<bool> fresh(num_values, false);
  for (const ResolvedNode& node : g.nodes) {
    for (int r : node.results) {
      if (node.op->effect == OpEffect::kFunctional) {
        fresh[r] = true;
      } else {
        owner[r] = owner[node.args[0].values[0]];
      }
    }
  }
  std::vector<int> last_use(num_values, -1);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    for (const BoundArg& a : g.nodes[n].args) {
      for (int v : a.values) {
        last_use[owner[v]] = std::max(last_use[owner[v]], turn[n]);
      }
    }
  }
  for (int v : g.outputs) last_use[owner[v]] = kForever;

  // A result needs memory when its node runs at its own turn, when a node
  // running at another turn reads it (the output of a fused kernel that an
  // absorbed node makes, as the ReLU after a batch norm), or when returned;
  // it gets it at the turn that makes it.
  std::vector<int> maker(num_values, -1), flat_of(num_values, -1);
  std::vector<std::vector<int>> made_at(g.nodes.size());
  int num_results = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    for (int r : g.nodes[n].results) {
      maker[r] = static_cast<int>(n);
      flat_of[r] = num_results++;
    }
    made_at[turn[n]].push_back(static_cast<int>(n));
  }
  std::vector<bool> in_memory(num_values, false);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    for (int r : g.nodes[n].results) {
      in_memory[r] = in_memory[r] || turn[n] == static_cast<int>(n);
    }
    for (const BoundArg& a : g.nodes[n].args) {
      for (int v : a.values) {
        if (maker[v] >= 0 && turn[maker[v]] != turn[n]) in_memory[v] = true;
      }
    }
  }
  for (int v : g.outputs) in_memory[v] = true;

  v1::ReferenceProgram program;
  std::vector<int> slot_of(num_values, -1);
  std::vector<int> result_slot(num_results, -1);
  std::vector<int> free_slots;
  std::vector<std::vector<int>> release_at(g.nodes.size());  // Owners.
  int64_t returned_bytes = 0, unplanned = 0;
  for (size_t t = 0; t < g.nodes.size(); ++t) {
    for (int n : made_at[t]) {
      for (int r : g.nodes[n].results) {
        // A fused group's inner results are never in memory.
        if (!fresh[r] || !in_memory[r]) continue;
        const Meta& m = g.values[r].meta;
        int64_t bytes = m.StorageExtent() * ItemSize(m.dtype);
        unplanned += bytes;
        if (last_use[r] == kForever) {
          returned_bytes += bytes;
          continue;
        }
        // Best fit among free slots; else a new one.
        int best = -1;
        for (size_t i = 0; i < free_slots.size(); ++i) {
          int64_t size = program.slot_bytes(free_slots[i]);
          if (size >= bytes &&
              (best < 0 || size < program.slot_bytes(free_slots[best]))) {
            best = static_cast<int>(i);
          }
        }
        int slot;
        if (best >= 0) {
          slot = free_slots[best];
          free_slots.erase(free_slots.begin() + best);
        } else {
          slot = program.slot_bytes_size();
          program.add_slot_bytes(bytes);
        }
        slot_of[r] = slot;
        result_slot[flat_of[r]] = slot;
        // Unused results are free right after the turn that made them.
        release_at[std::max(last_use[r], static_cast<int>(t))].push_back(r);
      }
    }
    for (int v : release_at[t]) free_slots.push_back(slot_of[v]);
  }
  for (int slot : result_slot) program.add_result_slot(slot);
  int64_t slots = 0;
  for (int64_t b : program.slot_bytes()) slots += b;
  program.set_planned_peak_bytes(slots + returned_bytes);
  program.set_unplanned_bytes(unplanned);
  *program.mutable_graph() = std::move(graph);
  return program;
}

}  // namespace aotcache
