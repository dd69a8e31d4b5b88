// The C++ source of the native backend's kernels (fusion.h finds their
// groups): each elementwise group's loop, over contiguous, broadcast or
// strided operands or ending in a reduction, and each own kernel's body
// (own_kernels.h) with, for a batch norm backward, the loop it absorbed.
// Nodes are named by index: nothing of a request reaches the source.
// Thread-safety: pure functions.
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_LOOP_SOURCES_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_LOOP_SOURCES_H_

#include <string>
#include <vector>

#include "core/backend/native/fusion.h"
#include "core/graph/resolved_graph.h"

namespace aotcache {

// The C++ source of the groups' kernels, aotcache_kernel_<index>.
std::string GenerateKernels(const ResolvedGraph& graph,
                            const std::vector<FusedGroup>& groups);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_LOOP_SOURCES_H_
