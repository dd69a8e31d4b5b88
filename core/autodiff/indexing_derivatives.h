// Derivative rules of the indexing family (embedding, gather,
// scatter_add and scatter_reduce, index_select and index_add), added to the
// table by AddIndexingDerivatives. Formulas follow PyTorch's derivatives.yaml.
// Thread-safety: rules are pure; the table is built once.
#ifndef AOTCACHE_CORE_AUTODIFF_INDEXING_DERIVATIVES_H_
#define AOTCACHE_CORE_AUTODIFF_INDEXING_DERIVATIVES_H_

#include "core/autodiff/derivatives.h"

namespace aotcache {

void AddIndexingDerivatives(DerivativeRules* rules);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_AUTODIFF_INDEXING_DERIVATIVES_H_
