// Running one compile plan with two backends, for tests that compare the
// native backend with the reference backend: forward on the given inputs,
// then (training) backward with deterministic tangents.
// Thread-safety: Native() is created once; the rest are pure functions.
#ifndef AOTCACHE_TESTS_BACKEND_COMPARE_BACKENDS_H_
#define AOTCACHE_TESTS_BACKEND_COMPARE_BACKENDS_H_

#include <optional>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/compile_plan.h"
#include "core/backend/native/native_backend.h"
#include "core/runtime/tensor.h"

namespace aotcache {
namespace testing {

// The native backend with its default compiler and flags.
const NativeBackend& Native();

struct BackendRun {
  std::vector<Tensor> outputs, inputs_after;
  std::vector<std::optional<Tensor>> grads;  // Training plans only.
};

// The plan compiled by `backend` and run by CompiledFunction on copies of
// `inputs`. Failures are test failures (and an empty run).
BackendRun RunWith(const Backend& backend, const CompilePlan& plan,
                   const std::vector<Tensor>& inputs);

// Equal outputs, inputs after the call and gradients (testing::
// CompareValues' tolerances), each mismatch a test failure.
void ExpectSameRuns(const BackendRun& got, const BackendRun& want);

}  // namespace testing
}  // namespace aotcache

#endif  // AOTCACHE_TESTS_BACKEND_COMPARE_BACKENDS_H_
