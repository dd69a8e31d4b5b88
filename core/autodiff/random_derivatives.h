// Derivative rules of the random ops (native_dropout, bernoulli), added to
// the table by AddRandomDerivatives. Formulas follow PyTorch's
// derivatives.yaml; a random result is never drawn again by the backward
// (it reads the forward's).
// Thread-safety: rules are pure; the table is built once.
#ifndef AOTCACHE_CORE_AUTODIFF_RANDOM_DERIVATIVES_H_
#define AOTCACHE_CORE_AUTODIFF_RANDOM_DERIVATIVES_H_

#include "core/autodiff/derivatives.h"

namespace aotcache {

void AddRandomDerivatives(DerivativeRules* rules);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_AUTODIFF_RANDOM_DERIVATIVES_H_
