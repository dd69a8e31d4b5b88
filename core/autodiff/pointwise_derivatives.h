// Derivative rules of the pointwise family (arithmetic, unary math,
// activations, maximum/minimum, where, atan2) and of the copies (clone,
// _to_copy, copy, fill, zeros_like), added to the table by
// AddPointwiseDerivatives. Formulas follow PyTorch's derivatives.yaml.
// Thread-safety: rules are pure; the table is built once.
#ifndef AOTCACHE_CORE_AUTODIFF_POINTWISE_DERIVATIVES_H_
#define AOTCACHE_CORE_AUTODIFF_POINTWISE_DERIVATIVES_H_

#include "core/autodiff/derivatives.h"

namespace aotcache {

void AddPointwiseDerivatives(DerivativeRules* rules);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_AUTODIFF_POINTWISE_DERIVATIVES_H_
