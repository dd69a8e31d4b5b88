// Derivative rules of scans and sorts (cumsum, sort, topk), added to the
// table by AddScanDerivatives. Formulas follow PyTorch's derivatives.yaml.
// Thread-safety: rules are pure; the table is built once.
#ifndef AOTCACHE_CORE_AUTODIFF_SCAN_DERIVATIVES_H_
#define AOTCACHE_CORE_AUTODIFF_SCAN_DERIVATIVES_H_

#include "core/autodiff/derivatives.h"

namespace aotcache {

void AddScanDerivatives(DerivativeRules* rules);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_AUTODIFF_SCAN_DERIVATIVES_H_
