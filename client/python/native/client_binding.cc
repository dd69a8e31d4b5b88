#include "client/python/native/client_binding.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "aotcache/v1/service.pb.h"
#include "client/python/native/status_error.h"
#include "core/graph/graph_json.h"
#include "core/graph/op_registry.h"
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

v1::Graph ParseGraph(const std::string& graph_json) {
  v1::Graph graph;
  Check(ParseJson(graph_json, &graph));
  return graph;
}

// The ops this build's registry compiles (decompositions included), in
// torch's printed form ("aten.add_.Tensor"), sorted; `nondifferentiable`:
// only those it has no derivative of (a decomposition's are its ops').
std::vector<std::string> RegistryOps(bool nondifferentiable) {
  std::vector<std::string> names;
  for (const OpInfo& op : OpRegistry::Get().ops()) {
    if (!nondifferentiable || (op.decompose == nullptr && !op.differentiable)) {
      names.push_back(op.qualified_name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
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
    d["unavailable_retries"] = c.unavailable_retries;
    return d;
  }

 private:
  std::unique_ptr<Client> client_;
};

}  // namespace

std::string Function::key() const { return absl::BytesToHexString(f_->key()); }

std::string Function::mode() const {
  return f_->mode() == v1::MODE_TRAINING ? "training" : "inference";
}

std::string Function::status() const {
  return f_->source() == Source::kInProcess ? "miss" : StatusName(f_->status());
}

std::string Function::source() const {
  return f_->source() == Source::kInProcess ? "in_process" : "server";
}

std::string Function::backward() const {
  switch (f_->backward_state()) {
    case v1::BACKWARD_STATE_READY:
      return "ready";
    case v1::BACKWARD_STATE_PENDING:
      return "pending";
    default:
      return "none";
  }
}

std::string Function::metadata_json() const {
  return ToCompactJson(f_->function().metadata(), /*print_defaults=*/true);
}

std::string Function::convention_json() const {
  return ToCompactJson(f_->function().forward_convention(),
                       /*print_defaults=*/true);
}

// Raises each StatusError as the aotcache.errors class of its code.
void RegisterStatusErrors() {
  // Held for the life of the process (the translator may run at any call).
  static PyObject* const for_code =
      py::object(py::module_::import("aotcache.errors").attr("for_code"))
          .release()
          .ptr();
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const StatusError& e) {
      py::object cls = py::reinterpret_borrow<py::object>(for_code)(e.code());
      PyErr_SetString(cls.ptr(), e.message().c_str());
    }
  });
}

py::class_<Function> BindClient(py::module_& m) {
  RegisterStatusErrors();
  // A graph parsed once, for callers that compile it again and again.
  py::class_<v1::Graph>(m, "Graph");
  m.def("parse_graph", &ParseGraph);
  m.def("set_blas_threads", &SetBlasThreads, py::arg("threads"));
  m.def("supported_ops", [] { return RegistryOps(false); });
  m.def("nondifferentiable_ops", [] { return RegistryOps(true); });
  py::class_<Function> function(m, "Function");
  function.def_property_readonly("key", &Function::key)
      .def_property_readonly("mode", &Function::mode)
      .def_property_readonly("status", &Function::status)
      .def_property_readonly(
          "bypass_reason",
          [](const Function& f) { return f.cached()->bypass_reason(); })
      .def_property_readonly(
          "fallback_reason",
          [](const Function& f) { return f.cached()->fallback_reason(); })
      .def_property_readonly("source", &Function::source)
      .def_property_readonly(
          "backend", [](const Function& f) { return f.cached()->backend(); })
      .def_property_readonly("backward", &Function::backward)
      .def("metadata_json", &Function::metadata_json)
      .def("convention_json", &Function::convention_json);
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
  return function;
}

}  // namespace aotcache
