// Derivative rules of the loss family (nll_loss_forward), added to the
// table by AddLossDerivatives. Formulas follow PyTorch's derivatives.yaml.
// Thread-safety: rules are pure; the table is built once.
#ifndef AOTCACHE_CORE_AUTODIFF_LOSS_DERIVATIVES_H_
#define AOTCACHE_CORE_AUTODIFF_LOSS_DERIVATIVES_H_

#include "core/autodiff/derivatives.h"

namespace aotcache {

void AddLossDerivatives(DerivativeRules* rules);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_AUTODIFF_LOSS_DERIVATIVES_H_
