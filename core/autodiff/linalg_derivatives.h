// Derivative rules of the linear algebra ops (mm, addmm, bmm, dot), after
// derivatives.yaml and FunctionsManual's mm_mat1/mm_mat2_backward.
// Thread-safety: AddLinalgDerivatives is called once, while the table is
// built.
#ifndef AOTCACHE_CORE_AUTODIFF_LINALG_DERIVATIVES_H_
#define AOTCACHE_CORE_AUTODIFF_LINALG_DERIVATIVES_H_

#include "core/autodiff/derivatives.h"

namespace aotcache {

void AddLinalgDerivatives(DerivativeRules* rules);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_AUTODIFF_LINALG_DERIVATIVES_H_
