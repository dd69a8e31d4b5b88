// aotcache._native: aotcache::Client and the runtime, for the Python
// package (aotcache/torch.py applies PyTorch's runtime semantics on top).
//
// Tensors cross without copies. Python passes each tensor as a TensorSpec
// tuple (storage address, storage elements, shape, strides, storage offset,
// dtype name) over memory it keeps alive for the call; results come back as
// DLPack capsules over the runtime's memory (torch.utils.dlpack.from_dlpack
// takes them over; bool ones as ("bool", capsule) of bytes, as torch 1.13's
// DLPack has no bool), or, for a result that lies in an argument's memory,
// as ("arg", index, shape, strides, offset) so that Python makes it a view
// of its own tensor.
// Thread-safety: as aotcache::Client; the GIL is released while compiling
// and running.
#include <dlpack/dlpack.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "aotcache/v1/service.pb.h"
#include "client/cpp/client.h"
#include "core/graph/dtype.h"
#include "core/graph/graph_json.h"

namespace py = pybind11;

namespace aotcache {
namespace {

// Raised in Python as aotcache._native.Error("CODE: message").
class Error : public std::runtime_error {
 public:
  explicit Error(const absl::Status& status)
      : std::runtime_error(absl::StrCat(absl::StatusCodeToString(status.code()),
                                        ": ", status.message())) {}
};

void Check(const absl::Status& status) {
  if (!status.ok()) throw Error(status);
}

// The dtype torch prints as `name` (core/graph/dtype.h's DTypeName).
DType DTypeOf(const std::string& name) {
  for (DType d : {v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT64, v1::DTYPE_INT64,
                  v1::DTYPE_BOOL}) {
    if (name == DTypeName(d)) return d;
  }
  throw py::value_error(
      "aotcache supports float32, float64, int64 and bool, "
      "not " +
      name);
}

DLDataType DLPackType(DType dtype) {
  switch (dtype) {
    case v1::DTYPE_FLOAT32:
      return {kDLFloat, 32, 1};
    case v1::DTYPE_FLOAT64:
      return {kDLFloat, 64, 1};
    case v1::DTYPE_INT64:
      return {kDLInt, 64, 1};
    case v1::DTYPE_BOOL:
      return {kDLUInt, 8, 1};  // Bytes: torch 1.13's DLPack has no bool.
    default:
      throw py::value_error("a result of an unsupported dtype");
  }
}

// A DLManagedTensor that keeps a runtime Tensor (and so its storage) alive.
struct Managed {
  DLManagedTensor managed;
  Tensor tensor;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

// A "dltensor" capsule over `t`'s memory; whoever consumes it (torch)
// calls the deleter, else the capsule's destructor does.
py::capsule ToDLPack(const Tensor& t) {
  auto* m = new Managed{{}, t, t.meta().shape, t.meta().stride};
  DLTensor& d = m->managed.dl_tensor;
  d.data = t.storage_data() + t.meta().offset * ItemSize(t.dtype());
  d.device = {kDLCPU, 0};
  d.ndim = static_cast<int32_t>(m->shape.size());
  d.dtype = DLPackType(t.dtype());
  d.shape = m->shape.data();
  d.strides = m->strides.data();
  d.byte_offset = 0;
  m->managed.manager_ctx = m;
  m->managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<Managed*>(self->manager_ctx);
  };
  return py::capsule(&m->managed, "dltensor", [](PyObject* capsule) {
    if (PyCapsule_IsValid(capsule, "dltensor")) {  // Never consumed.
      auto* managed = static_cast<DLManagedTensor*>(
          PyCapsule_GetPointer(capsule, "dltensor"));
      managed->deleter(managed);
    }
  });
}

// A TensorSpec over the caller's memory.
Tensor FromSpec(const py::tuple& spec) {
  if (spec.size() != 6) throw py::value_error("a TensorSpec has 6 fields");
  Meta meta;
  meta.shape = spec[2].cast<std::vector<int64_t>>();
  meta.stride = spec[3].cast<std::vector<int64_t>>();
  meta.offset = spec[4].cast<int64_t>();
  meta.dtype = DTypeOf(spec[5].cast<std::string>());
  auto* storage = reinterpret_cast<void*>(spec[0].cast<uintptr_t>());
  return Tensor::Borrow(storage, spec[1].cast<int64_t>(), std::move(meta));
}

std::vector<Tensor> FromSpecs(const py::list& specs) {
  std::vector<Tensor> out;
  out.reserve(specs.size());
  for (const py::handle& s : specs)
    out.push_back(FromSpec(s.cast<py::tuple>()));
  return out;
}

// `t` for Python: a view of argument i when it lies in its memory, else a
// DLPack capsule that keeps the runtime's storage alive.
py::object ToPython(const Tensor& t, const std::vector<Tensor>& args) {
  const Meta& m = t.meta();
  for (size_t i = 0; i < args.size(); ++i) {
    if (t.SharesStorageWith(args[i])) {
      return py::make_tuple("arg", i, m.shape, m.stride, m.offset);
    }
  }
  if (t.dtype() == v1::DTYPE_BOOL) return py::make_tuple("bool", ToDLPack(t));
  return ToDLPack(t);
}

py::list ToPythonList(const std::vector<std::optional<Tensor>>& ts,
                      const std::vector<Tensor>& args) {
  py::list out;
  for (const std::optional<Tensor>& t : ts) {
    out.append(t.has_value() ? ToPython(*t, args) : py::none());
  }
  return out;
}

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
  std::string metadata_json() const {
    return ToJson(f_->function().metadata(), /*print_defaults=*/true);
  }
  std::string convention_json() const {
    return ToJson(f_->function().forward_convention(), /*print_defaults=*/true);
  }

  // The forward artifact's raw results for `args` (the function's inputs).
  py::list RunForward(const py::list& specs) const {
    std::vector<Tensor> args = FromSpecs(specs);
    absl::StatusOr<std::vector<Tensor>> raw;
    {
      py::gil_scoped_release release;
      raw =
          f_->function().RunForwardArtifact(f_->function().ArtifactArgs(args));
    }
    Check(raw.status());
    py::list out;
    for (const Tensor& t : *raw) out.append(ToPython(t, args));
    return out;
  }

  // Per input and per synthetic base: a gradient or None. The backward is
  // fetched (or compiled) on first use.
  py::tuple RunBackward(const py::list& saved_specs,
                        const py::list& tangent_specs) {
    std::vector<Tensor> saved = FromSpecs(saved_specs);
    std::vector<Tensor> tangents = FromSpecs(tangent_specs);
    absl::StatusOr<CompiledFunction::Gradients> grads;
    {
      py::gil_scoped_release release;
      grads = f_->Backward(saved, tangents);
    }
    Check(grads.status());
    std::vector<Tensor> args = saved;
    args.insert(args.end(), tangents.begin(), tangents.end());
    return py::make_tuple(ToPythonList(grads->inputs, args),
                          ToPythonList(grads->synthetic_bases, args));
  }

 private:
  std::unique_ptr<CachedFunction> f_;
};

v1::Graph ParseGraph(const std::string& graph_json) {
  v1::Graph graph;
  Check(ParseJson(graph_json, &graph));
  return graph;
}

class PyClient {
 public:
  PyClient(const std::string& server, const std::string& artifact_dir) {
    ClientOptions options;
    options.server = server;
    options.artifact_dir = artifact_dir;
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
  py::register_exception<aotcache::Error>(m, "Error");
  // A graph parsed once, for callers that compile it again and again.
  py::class_<aotcache::v1::Graph>(m, "Graph");
  m.def("parse_graph", &aotcache::ParseGraph);
  py::class_<Function>(m, "Function")
      .def_property_readonly("key", &Function::key)
      .def_property_readonly("mode", &Function::mode)
      .def_property_readonly("status", &Function::status)
      .def_property_readonly("bypass_reason", &Function::bypass_reason)
      .def_property_readonly("fallback_reason", &Function::fallback_reason)
      .def_property_readonly("source", &Function::source)
      .def_property_readonly("backward", &Function::backward)
      .def("metadata_json", &Function::metadata_json)
      .def("convention_json", &Function::convention_json)
      .def("run_forward", &Function::RunForward)
      .def("run_backward", &Function::RunBackward);
  py::class_<PyClient>(m, "Client")
      .def(py::init<const std::string&, const std::string&>(),
           py::arg("server") = "", py::arg("artifact_dir") = "")
      .def("compile", &PyClient::Compile)
      .def("compile", &PyClient::CompileParsed)
      .def_property_readonly("target", &PyClient::target)
      .def("counters", &PyClient::counters);
}
