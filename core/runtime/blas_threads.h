// The thread count of the BLAS (OpenBLAS) that the runtime's kernels and
// the native backend's generated code call: a process-wide setting of the
// library, which the Python runtime sets to torch.get_num_threads() so
// that compiled code uses the threads the caller allows.
//
// Thread-safety: OpenBLAS's own; call it between calls, not during one.
#ifndef AOTCACHE_CORE_RUNTIME_BLAS_THREADS_H_
#define AOTCACHE_CORE_RUNTIME_BLAS_THREADS_H_

namespace aotcache {

// Sets the number of threads a matrix product may use (at least 1).
void SetBlasThreads(int threads);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_RUNTIME_BLAS_THREADS_H_
