// Derivative rules: for each differentiable op (in-place ops use their
// functional counterpart's rule), a function that, given the gradients of
// the op's results, emits the gradients of its arguments into the backward
// graph. Formulas follow PyTorch's derivatives.yaml.
// Thread-safety: the table is immutable.
#ifndef AOTCACHE_CORE_AUTODIFF_DERIVATIVES_H_
#define AOTCACHE_CORE_AUTODIFF_DERIVATIVES_H_

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "core/autodiff/grad_context.h"

namespace aotcache {

using DerivativeRule = void (*)(GradContext& ctx);
// Rules by op, as each op family's file adds its own.
using DerivativeRules = absl::flat_hash_map<std::string, DerivativeRule>;

// The rule for an op ("aten.mul.Tensor"), or nullptr.
DerivativeRule FindDerivative(absl::string_view qualified_name);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_AUTODIFF_DERIVATIVES_H_
