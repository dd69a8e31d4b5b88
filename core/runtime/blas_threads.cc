#include "core/runtime/blas_threads.h"

#include <algorithm>

extern "C" void openblas_set_num_threads(
    int num_threads);  // OpenBLAS's cblas.h

namespace aotcache {

void SetBlasThreads(int threads) {
  openblas_set_num_threads(std::max(1, threads));
}

}  // namespace aotcache
