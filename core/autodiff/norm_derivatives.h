// Derivative rules of the batch norm family (both
// _native_batch_norm_legit forms), added to the table by
// AddNormDerivatives. Formulas follow PyTorch's derivatives.yaml.
// Thread-safety: rules are pure; the table is built once.
#ifndef AOTCACHE_CORE_AUTODIFF_NORM_DERIVATIVES_H_
#define AOTCACHE_CORE_AUTODIFF_NORM_DERIVATIVES_H_

#include "core/autodiff/derivatives.h"

namespace aotcache {

void AddNormDerivatives(DerivativeRules* rules);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_AUTODIFF_NORM_DERIVATIVES_H_
