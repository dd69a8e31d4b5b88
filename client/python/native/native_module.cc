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
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "aotcache/v1/service.pb.h"
#include "client/cpp/client.h"
#include "client/python/native/status_error.h"
#include "client/python/native/torch_tensors.h"
#include "client/python/native/training_function.h"
#include "core/graph/graph_json.h"
#include "core/runtime/blas_threads.h"

namespace py = pybind11;

namespace aotcache {
namespace {

std::string StatusName(v1::CompileStatus s) {
  switch (s) {
    case v1::COMPILE_STATUS_HIT:
      return "hit";
    case v1::COMPILE_STATUS_MISS:
      return "miss";
    case v1::COMPILE_STATUS_BYPASS:
      return "bypass";
    default:
      return "";
  }
}

// A compiled function: Client::Compile's CachedFunction.
class Function {
 public:
  explicit Function(std::unique_ptr<CachedFunction> f) : f_(std::move(f)) {}

  const std::shared_ptr<CachedFunction>& cached() const { return f_; }

  std::string key() const { return absl::BytesToHexString(f_->key()); }
  std::string mode() const {
    return f_->mode() == v1::MODE_TRAINING ? "training" : "inference";
  }
  // "hit", "miss" or "bypass"; compiled in process is a miss.
  std::string status() const {
    return f_->source() == Source::kInProcess ? "miss"
                                              : StatusName(f_->status());
  }
  std::string source() const {
    return f_->source() == Source::kInProcess ? "in_process" : "server";
  }
  std::string backward() const {
    switch (f_->backward_state()) {
      case v1::BACKWARD_STATE_READY:
        return "ready";
      case v1::BACKWARD_STATE_PENDING:
        return "pending";
      default:
        return "none";
    }
  }
  std::string bypass_reason() const { return f_->bypass_reason(); }
  std::string fallback_reason() const { return f_->fallback_reason(); }
  std::string backend() const { return f_->backend(); }
  std::string metadata_json() const {
    return ToCompactJson(f_->function().metadata(), /*print_defaults=*/true);
  }
  std::string convention_json() const {
    return ToCompactJson(f_->function().forward_convention(),
                         /*print_defaults=*/true);
  }

  // The forward artifact's results for `inputs` (the function's inputs):
  // over the runtime's memory, or views of the input they lie in.
  // `origins[i]`: where the runtime sees inputs[i]'s storage begin (Borrow).
  std::vector<at::Tensor> RunForward(
      const std::vector<at::Tensor>& inputs, uint64_t seed,
      const std::vector<int64_t>& origins) const {
    const std::vector<Tensor> args = Borrow(inputs, origins);
    absl::StatusOr<std::vector<Tensor>> artifact_args =
        f_->function().ArtifactArgs(args);
    Check(artifact_args.status());
    absl::StatusOr<std::vector<Tensor>> raw =
        f_->function().RunForwardArtifact(*artifact_args, seed);
    Check(raw.status());
    std::vector<at::Tensor> out;
    out.reserve(raw->size());
    for (const Tensor& t : *raw) out.push_back(ToTorch(t, args, inputs).tensor);
    return out;
  }

 private:
  std::shared_ptr<CachedFunction> f_;
};

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

v1::Graph ParseGraph(const std::string& graph_json) {
  v1::Graph graph;
  Check(ParseJson(graph_json, &graph));
  return graph;
}

class PyClient {
 public:
  PyClient(const std::string& server, const std::string& artifact_dir,
           const std::string& daemon_binary) {
    ClientOptions options;
    options.server = server;
    options.artifact_dir = artifact_dir;
    options.daemon_binary = daemon_binary;
    client_ = std::make_unique<Client>(options);
  }

  // `graph_json`: an aotcache.v1.Graph in proto3 JSON (fx_export's form).
  Function Compile(const std::string& graph_json) {
    return CompileParsed(ParseGraph(graph_json));
  }

  Function CompileParsed(const v1::Graph& graph) {
    absl::StatusOr<std::unique_ptr<CachedFunction>> f;
    {
      py::gil_scoped_release release;
      f = client_->Compile(graph);
    }
    Check(f.status());
    return Function(*std::move(f));
  }

  std::string target() const { return client_->target(); }
  // Why in-process compiles use the reference backend ("" when native).
  std::string why_reference() {
    return client_->in_process_backend().why_reference;
  }
  py::dict counters() const {
    ClientCounters c = client_->counters();
    py::dict d;
    d["artifacts_fetched"] = c.artifacts_fetched;
    d["bytes_fetched"] = c.bytes_fetched;
    d["local_artifact_hits"] = c.local_artifact_hits;
    d["loaded_forward_reuses"] = c.loaded_forward_reuses;
    return d;
  }

 private:
  std::unique_ptr<Client> client_;
};

}  // namespace
}  // namespace aotcache

PYBIND11_MODULE(_native, m) {
  using aotcache::Function;
  using aotcache::PyClient;
  m.doc() = "aotcache's C++ client and runtime (see aotcache.torch).";
  py::module_::import("torch");  // Its tensor type, for the conversions.
  py::register_exception<aotcache::StatusError>(m, "Error");
  // A graph parsed once, for callers that compile it again and again.
  py::class_<aotcache::v1::Graph>(m, "Graph");
  m.def("parse_graph", &aotcache::ParseGraph);
  m.def("set_blas_threads", &aotcache::SetBlasThreads, py::arg("threads"));
  py::class_<Function>(m, "Function")
      .def_property_readonly("key", &Function::key)
      .def_property_readonly("mode", &Function::mode)
      .def_property_readonly("status", &Function::status)
      .def_property_readonly("bypass_reason", &Function::bypass_reason)
      .def_property_readonly("fallback_reason", &Function::fallback_reason)
      .def_property_readonly("source", &Function::source)
      .def_property_readonly("backend", &Function::backend)
      .def_property_readonly("backward", &Function::backward)
      .def("metadata_json", &Function::metadata_json)
      .def("convention_json", &Function::convention_json)
      .def("run_forward", &Function::RunForward, py::arg("inputs"),
           py::arg("seed") = 0, py::arg("origins") = std::vector<int64_t>(),
           py::call_guard<py::gil_scoped_release>());
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
             const std::vector<at::Tensor>& differentiable, uint64_t seed,
             const std::vector<int64_t>& origins) {
            return aotcache::RunTraining(step, inputs, differentiable, seed,
                                         origins);
          },
          py::arg("inputs"), py::arg("differentiable"), py::arg("seed") = 0,
          py::arg("origins") = std::vector<int64_t>(),
          py::call_guard<py::gil_scoped_release>());
  py::class_<PyClient>(m, "Client")
      .def(py::init<const std::string&, const std::string&,
                    const std::string&>(),
           py::arg("server") = "", py::arg("artifact_dir") = "",
           py::arg("daemon_binary") = "")
      .def("compile", &PyClient::Compile)
      .def("compile", &PyClient::CompileParsed)
      .def_property_readonly("target", &PyClient::target)
      .def("why_reference", &PyClient::why_reference)
      .def("counters", &PyClient::counters);
}
