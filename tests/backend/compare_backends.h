// Running one compile plan with two backends, for tests that compare the
// native backend with the reference backend: forward on the given inputs,
// then (training) backward with deterministic tangents; and the helpers of
// those tests (one-off graphs, filled tensors).
// Thread-safety: Native() is created once; the rest are pure functions.
#ifndef AOTCACHE_TESTS_BACKEND_COMPARE_BACKENDS_H_
#define AOTCACHE_TESTS_BACKEND_COMPARE_BACKENDS_H_

#include <memory>
#include <optional>
#include <string>
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

// A one-off graph (JSON) and its compile plan, kept alive together; null
// (and a test failure) when it does not analyze or plan.
struct PlannedGraph {
  v1::Graph graph;
  CompilePlan plan;
};
std::unique_ptr<PlannedGraph> Plan(const std::string& json);

// The native program of the plan's forward, or of its backward.
v1::NativeProgram NativeProgramOf(const CompilePlan& plan);
v1::NativeProgram NativeBackwardProgramOf(const CompilePlan& plan);

// The forward's outputs on copies of `inputs`, with `backend`.
std::vector<Tensor> ForwardWith(const Backend& backend, const CompilePlan& plan,
                                const std::vector<Tensor>& inputs);

// The native backend's outputs and inputs after the call equal the
// reference backend's.
void ExpectNativeMatchesReference(const CompilePlan& plan,
                                  const std::vector<Tensor>& inputs);

// How many times `what` occurs in `text`.
int Count(const std::string& text, const std::string& what);

// A contiguous tensor of `shape` with element i = f(i).
Tensor Filled(std::vector<int64_t> shape, double (*f)(int64_t),
              DType dtype = v1::DTYPE_FLOAT32);

}  // namespace testing
}  // namespace aotcache

#endif  // AOTCACHE_TESTS_BACKEND_COMPARE_BACKENDS_H_
