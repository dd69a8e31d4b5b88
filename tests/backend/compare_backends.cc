#include "tests/backend/compare_backends.h"

#include <cmath>

#include "core/analysis/analyze.h"
#include "core/backend/reference_backend.h"
#include "core/runtime/compiled_function.h"
#include "core/runtime/strided.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/value_fixtures.h"

namespace aotcache {
namespace testing {
namespace {

using ::aotcache::testing::IsOk;

// Deterministic tangents shaped as the metadata says.
Tensor Tangent(const v1::TangentInfo& t, int salt) {
  Meta m = MetaFromProto(t.meta());
  Tensor out = Tensor::Contiguous(m.shape, m.dtype);
  for (int64_t i = 0; i < out.numel(); ++i) {
    StoreFrom<double>(out.storage_data(), m.dtype, i,
                      std::sin(0.37 * static_cast<double>(i + salt)) + 0.25);
  }
  return out;
}

}  // namespace

const NativeBackend& Native() {
  static const NativeBackend* backend = [] {
    auto b = NativeBackend::Create();
    EXPECT_THAT(b, IsOk());
    return b->release();
  }();
  return *backend;
}

BackendRun RunWith(const Backend& backend, const CompilePlan& plan,
                   const std::vector<Tensor>& inputs) {
  BackendRun run;
  auto fw = CompileForward(plan, backend);
  EXPECT_THAT(fw, IsOk());
  if (!fw.ok()) return run;
  auto function = CompiledFunction::Load(*fw, plan.metadata);
  EXPECT_THAT(function, IsOk());
  if (!function.ok()) return run;
  // Copies that keep the inputs' layouts and the storages they share.
  std::vector<Tensor> args;
  std::vector<std::pair<const char*, Tensor>> storages;
  for (const Tensor& t : inputs) {
    Tensor storage;
    for (const auto& [data, copy] : storages) {
      if (data == t.storage_data()) storage = copy;
    }
    if (!storage.defined()) {
      Meta whole = ContiguousMeta({t.storage_elements()}, t.dtype());
      storage = Tensor::Zeros(whole);
      CopyInto(Tensor::Borrow(t.storage_data(), t.storage_elements(), whole),
               storage);
      storages.emplace_back(t.storage_data(), storage);
    }
    args.push_back(storage.View(t.meta()));
  }
  auto result = (*function)->Forward(&args);
  EXPECT_THAT(result, IsOk());
  if (!result.ok()) return run;
  run.outputs = result->outputs;
  run.inputs_after = args;
  if (!plan.backward_graph.has_value()) return run;
  auto bw = CompileBackward(plan, *fw, backend);
  EXPECT_THAT(bw, IsOk());
  if (!bw.ok()) return run;
  absl::Status attached = (*function)->AttachBackward(*bw);
  EXPECT_THAT(attached, IsOk());
  if (!attached.ok()) return run;
  std::vector<Tensor> tangents;
  const auto& vmd = plan.metadata.view_and_mutation();
  for (int t = 0; t < vmd.tangents_size(); ++t) {
    tangents.push_back(Tangent(vmd.tangents(t), t));
  }
  auto grads = (*function)->Backward(result->saved, tangents);
  EXPECT_THAT(grads, IsOk());
  if (grads.ok()) run.grads = grads->inputs;
  return run;
}

void ExpectSameRuns(const BackendRun& got, const BackendRun& want) {
  ASSERT_EQ(got.outputs.size(), want.outputs.size());
  for (size_t j = 0; j < want.outputs.size(); ++j) {
    EXPECT_EQ(CompareValues(got.outputs[j], want.outputs[j]), "")
        << "output " << j;
  }
  ASSERT_EQ(got.inputs_after.size(), want.inputs_after.size());
  for (size_t i = 0; i < want.inputs_after.size(); ++i) {
    EXPECT_EQ(CompareValues(got.inputs_after[i], want.inputs_after[i]), "")
        << "input " << i;
  }
  ASSERT_EQ(got.grads.size(), want.grads.size());
  for (size_t i = 0; i < want.grads.size(); ++i) {
    ASSERT_EQ(got.grads[i].has_value(), want.grads[i].has_value()) << i;
    if (want.grads[i].has_value()) {
      EXPECT_EQ(CompareValues(*got.grads[i], *want.grads[i]), "")
          << "gradient " << i;
    }
  }
}

std::unique_ptr<PlannedGraph> Plan(const std::string& json) {
  auto p = std::make_unique<PlannedGraph>();
  p->graph = GraphFromJson(json);
  absl::StatusOr<Analysis> a = Analyze(p->graph, v1::CompileOptions());
  EXPECT_THAT(a, IsOk());
  if (!a.ok()) return nullptr;
  absl::StatusOr<CompilePlan> plan = PlanCompilation(*a);
  EXPECT_THAT(plan, IsOk());
  if (!plan.ok()) return nullptr;
  p->plan = *std::move(plan);
  return p;
}

v1::NativeProgram NativeProgramOf(const CompilePlan& plan) {
  v1::NativeProgram native;
  auto artifact = CompileForward(plan, Native());
  EXPECT_THAT(artifact, IsOk());
  if (artifact.ok()) {
    EXPECT_TRUE(native.ParseFromString(artifact->payload()));
  }
  return native;
}

v1::NativeProgram NativeBackwardProgramOf(const CompilePlan& plan) {
  v1::NativeProgram native;
  auto forward = CompileForward(plan, Native());
  EXPECT_THAT(forward, IsOk());
  if (!forward.ok()) return native;
  auto backward = CompileBackward(plan, *forward, Native());
  EXPECT_THAT(backward, IsOk());
  if (backward.ok()) {
    EXPECT_TRUE(native.ParseFromString(backward->payload()));
  }
  return native;
}

std::vector<Tensor> ForwardWith(const Backend& backend, const CompilePlan& plan,
                                const std::vector<Tensor>& inputs) {
  return RunWith(backend, plan, inputs).outputs;
}

void ExpectNativeMatchesReference(const CompilePlan& plan,
                                  const std::vector<Tensor>& inputs) {
  ExpectSameRuns(RunWith(Native(), plan, inputs),
                 RunWith(ReferenceBackend(), plan, inputs));
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

Tensor Filled(std::vector<int64_t> shape, double (*f)(int64_t), DType dtype) {
  Tensor t = Tensor::Contiguous(std::move(shape), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    StoreFrom<double>(t.storage_data(), t.dtype(), i, f(i));
  }
  return t;
}

}  // namespace testing
}  // namespace aotcache
