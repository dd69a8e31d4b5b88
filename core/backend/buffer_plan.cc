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

  v1::ReferenceProgram program;
  std::vector<int> slot_of(num_values, -1);
  std::vector<int> free_slots;
  std::vector<std::vector<int>> release_at(g.nodes.size());  // Owners.
  int64_t returned_bytes = 0, unplanned = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const ResolvedNode& node = g.nodes[n];
    for (int r : node.results) {
      int slot = -1;
      // A fused group's inner results are never in memory.
      if (fresh[r] && turn[n] == static_cast<int>(n)) {
        const Meta& m = g.values[r].meta;
        int64_t bytes = m.StorageExtent() * ItemSize(m.dtype);
        unplanned += bytes;
        if (last_use[r] == kForever) {
          returned_bytes += bytes;
        } else {
          // Best fit among free slots; else a new one.
          int best = -1;
          for (size_t i = 0; i < free_slots.size(); ++i) {
            int64_t size = program.slot_bytes(free_slots[i]);
            if (size >= bytes &&
                (best < 0 || size < program.slot_bytes(free_slots[best]))) {
              best = static_cast<int>(i);
            }
          }
          if (best >= 0) {
            slot = free_slots[best];
            free_slots.erase(free_slots.begin() + best);
          } else {
            slot = program.slot_bytes_size();
            program.add_slot_bytes(bytes);
          }
          slot_of[r] = slot;
          // Unused results are free right after the node that made them.
          int release = last_use[r] < static_cast<int>(n) ? static_cast<int>(n)
                                                          : last_use[r];
          release_at[release].push_back(r);
        }
      }
      program.add_result_slot(slot);
    }
    for (int v : release_at[n]) free_slots.push_back(slot_of[v]);
  }
  int64_t slots = 0;
  for (int64_t b : program.slot_bytes()) slots += b;
  program.set_planned_peak_bytes(slots + returned_bytes);
  program.set_unplanned_bytes(unplanned);
  *program.mutable_graph() = std::move(graph);
  return program;
}

}  // namespace aotcache
