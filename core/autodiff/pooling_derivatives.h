// Derivative rules of the 2-d pooling family (max_pool2d_with_indices,
// avg_pool2d, _adaptive_avg_pool2d), added to the table by
// AddPoolingDerivatives. Formulas follow PyTorch's derivatives.yaml.
// Thread-safety: rules are pure; the table is built once.
#ifndef AOTCACHE_CORE_AUTODIFF_POOLING_DERIVATIVES_H_
#define AOTCACHE_CORE_AUTODIFF_POOLING_DERIVATIVES_H_

#include "core/autodiff/derivatives.h"

namespace aotcache {

void AddPoolingDerivatives(DerivativeRules* rules);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_AUTODIFF_POOLING_DERIVATIVES_H_
