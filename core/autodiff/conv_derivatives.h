// Derivative rules of the convolution family (convolution), added to the
// table by AddConvDerivatives. Formulas follow PyTorch's derivatives.yaml.
// Thread-safety: rules are pure; the table is built once.
#ifndef AOTCACHE_CORE_AUTODIFF_CONV_DERIVATIVES_H_
#define AOTCACHE_CORE_AUTODIFF_CONV_DERIVATIVES_H_

#include "core/autodiff/derivatives.h"

namespace aotcache {

void AddConvDerivatives(DerivativeRules* rules);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_AUTODIFF_CONV_DERIVATIVES_H_
