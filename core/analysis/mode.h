// The mode decision (SEMANTICS.md §4; PyTorch PRs #128229 and #128890):
// training iff some input requires grad and either some output requires grad
// (other than a view of, or the very, input that requires grad, which the
// runtime regenerates) or some input that requires grad has its data mutated
// other than under no_grad and not hidden from autograd.
// Thread-safety: pure function.
#ifndef AOTCACHE_CORE_ANALYSIS_MODE_H_
#define AOTCACHE_CORE_ANALYSIS_MODE_H_

#include <string>
#include <vector>

#include "aotcache/v1/analysis.pb.h"

namespace aotcache {

// `caller_requires_grad[i]`: input i's requires_grad as the caller passed it.
v1::Mode DecideMode(const std::vector<bool>& caller_requires_grad,
                    const v1::ViewAndMutationData& vmd);

// One sentence saying which term of the rule decided the mode, naming the
// input or output, for people reading `aotcache analyze`.
std::string ExplainMode(const std::vector<bool>& caller_requires_grad,
                        const v1::ViewAndMutationData& vmd);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_ANALYSIS_MODE_H_
