// aotcache._native: aotcache::Client and the runtime, for the Python
// package (aotcache/torch.py applies PyTorch's runtime semantics on top).
//
// Tensors cross as torch tensors, without copies (torch_tensors.h): the
// runtime borrows the caller's memory for the call, and its results come
// back over the runtime's memory, or as views of the argument they lie in.
// Training mode runs as one C++ autograd node (training_function.h).
// Thread-safety: as aotcache::Client; the GIL is released while compiling
// and running.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "aotcache/v1/service.pb.h"
#include "client/cpp/client.h"
#include "client/python/native/call_signature.h"
#include "client/python/native/client_binding.h"
#include "client/python/native/status_error.h"
#include "client/python/native/torch_tensors.h"
#include "client/python/native/training_function.h"

namespace py = pybind11;

namespace aotcache {
namespace {

// The forward artifact's results for `inputs` (the function's inputs):
// over the runtime's memory, or views of the input they lie in.
// `origins[i]`: where the runtime sees inputs[i]'s storage begin (Borrow).
std::vector<at::Tensor> RunForward(const Function& f,
                                   const std::vector<at::Tensor>& inputs,
                                   uint64_t seed,
                                   const std::vector<int64_t>& origins) {
  const std::vector<Tensor> args = Borrow(inputs, origins);
  const CompiledFunction& compiled = f.cached()->function();
  absl::StatusOr<std::vector<Tensor>> artifact_args =
      compiled.ArtifactArgs(args);
  Check(artifact_args.status());
  absl::StatusOr<std::vector<Tensor>> raw =
      compiled.RunForwardArtifact(*artifact_args, seed);
  Check(raw.status());
  std::vector<at::Tensor> out;
  out.reserve(raw->size());
  for (const Tensor& t : *raw) out.push_back(ToTorch(t, args, inputs).tensor);
  return out;
}

// Training mode for one Function: the plan CompiledEntry computed from the
// metadata, and its run (one autograd node). Tangent dtypes are named as in
// the metadata ("DTYPE_FLOAT32").
std::shared_ptr<TrainingStep> MakeTrainingStep(
    const Function& f, int num_mutated, int num_user, int num_bases,
    std::vector<int> function_user, std::vector<bool> member,
    std::vector<bool> mutated_data, std::vector<int> tangent_positions,
    std::vector<std::vector<int64_t>> tangent_shapes,
    const std::vector<std::string>& tangent_dtypes,
    std::vector<int> non_differentiable) {
  auto step = std::make_shared<TrainingStep>();
  step->function = f.cached();
  TrainingPlan& plan = step->plan;
  plan.num_mutated = num_mutated;
  plan.num_user = num_user;
  plan.num_bases = num_bases;
  plan.function_user = std::move(function_user);
  plan.member = std::move(member);
  plan.mutated_data = std::move(mutated_data);
  plan.tangent_positions = std::move(tangent_positions);
  plan.tangent_shapes = std::move(tangent_shapes);
  for (const std::string& name : tangent_dtypes) {
    DType dtype;
    if (!v1::DType_Parse(name, &dtype)) {
      throw py::value_error("unknown dtype " + name);
    }
    plan.tangent_types.push_back(ScalarTypeOf(dtype));
  }
  plan.non_differentiable = std::move(non_differentiable);
  if (!plan.Consistent())
    throw py::value_error("an inconsistent training plan");
  return step;
}

}  // namespace
}  // namespace aotcache

PYBIND11_MODULE(_native, m) {
  m.doc() = "aotcache's C++ client and runtime (see aotcache.torch).";
  py::module_::import("torch");  // Its tensor type, for the conversions.
  aotcache::BindClient(m).def("run_forward", &aotcache::RunForward,
                              py::arg("inputs"), py::arg("seed") = 0,
                              py::arg("origins") = std::vector<int64_t>(),
                              py::call_guard<py::gil_scoped_release>());
  m.def("signature", &aotcache::CallSignature, py::arg("leaves"),
        py::arg("spec"), py::arg("captured"));
  py::class_<aotcache::TrainingStep, std::shared_ptr<aotcache::TrainingStep>>(
      m, "TrainingStep")
      .def(py::init(&aotcache::MakeTrainingStep), py::arg("function"),
           py::arg("num_mutated"), py::arg("num_user"), py::arg("num_bases"),
           py::arg("function_user"), py::arg("member"), py::arg("mutated_data"),
           py::arg("tangent_positions"), py::arg("tangent_shapes"),
           py::arg("tangent_dtypes"), py::arg("non_differentiable"))
      .def(
          "run",
          [](const std::shared_ptr<aotcache::TrainingStep>& step,
             const std::vector<at::Tensor>& inputs,
             const std::optional<std::vector<at::Tensor>>& differentiable,
             uint64_t seed, const std::vector<int64_t>& origins) {
            // None: the inputs themselves (no synthetic bases).
            return aotcache::RunTraining(
                step, inputs, differentiable.value_or(inputs), seed, origins);
          },
          py::arg("inputs"), py::arg("differentiable"), py::arg("seed") = 0,
          py::arg("origins") = std::vector<int64_t>(),
          py::call_guard<py::gil_scoped_release>());
}
