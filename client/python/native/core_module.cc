// aotcache._core: aotcache::Client and the runtime for the Python package,
// with no torch in it, so that it works with every torch release: tensors
// cross as raw descriptions (raw_tensors.h), without copies, and training
// mode's autograd node is a torch.autograd.Function in Python
// (aotcache/_torch_node.py). aotcache._native, built against Debian's
// libtorch, runs the same artifacts with a C++ autograd node instead.
// Thread-safety: as aotcache::Client; the GIL is released while compiling
// and running.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "client/python/native/client_binding.h"
#include "client/python/native/raw_tensors.h"
#include "client/python/native/status_error.h"

namespace py = pybind11;

namespace aotcache {
namespace {

RawTensor ToRaw(const py::tuple& t) {
  if (t.size() != 7) {
    throw std::invalid_argument(
        "a raw tensor is (storage, bytes, offset, shape, stride, dtype, "
        "origin)");
  }
  return RawTensor{t[0].cast<uintptr_t>(),
                   t[1].cast<int64_t>(),
                   t[2].cast<int64_t>(),
                   t[3].cast<std::vector<int64_t>>(),
                   t[4].cast<std::vector<int64_t>>(),
                   t[5].cast<std::string>(),
                   t[6].cast<int64_t>()};
}

std::vector<RawTensor> ToRaw(const py::list& ts) {
  std::vector<RawTensor> out;
  out.reserve(ts.size());
  for (const py::handle& t : ts) out.push_back(ToRaw(t.cast<py::tuple>()));
  return out;
}

// The forward artifact's results for `inputs` (the function's inputs), in
// ToPython's form; from index `keep_from` on (the values saved for the
// backward), a result that lies in no input as a KeptTensor.
py::list RunForward(const Function& f, const py::list& inputs, uint64_t seed,
                    int64_t keep_from) {
  const std::vector<RawTensor> raw = ToRaw(inputs);
  const std::vector<Tensor> args = Borrow(raw);
  absl::StatusOr<std::vector<Tensor>> results;
  {
    py::gil_scoped_release release;
    const CompiledFunction& compiled = f.cached()->function();
    absl::StatusOr<std::vector<Tensor>> artifact_args =
        compiled.ArtifactArgs(args);
    results = artifact_args.ok()
                  ? compiled.RunForwardArtifact(*artifact_args, seed)
                  : artifact_args.status();
  }
  Check(results.status());
  py::list out;
  for (size_t n = 0; n < results->size(); ++n) {
    const Tensor& t = (*results)[n];
    if (keep_from >= 0 && static_cast<int64_t>(n) >= keep_from &&
        LiesIn(t, args) < 0) {
      out.append(py::cast(KeptTensor{t}));
    } else {
      out.append(ToPython(t, args, raw));
    }
  }
  return out;
}

// The backward artifact on the saved values (raw tensors or KeptTensors)
// and the tangents: per input, then per synthetic base, a gradient in
// ToPython's form (never a view of a KeptTensor: a capsule), or None.
py::tuple RunBackward(const Function& f, const py::list& saved,
                      const py::list& tangents) {
  std::vector<RawTensor> raw;  // A default one for a KeptTensor.
  std::vector<Tensor> args;
  std::vector<Tensor> borrowed;  // args, but undefined for a KeptTensor.
  for (const py::handle& h : saved) {
    if (py::isinstance<KeptTensor>(h)) {
      raw.emplace_back();
      args.push_back(h.cast<const KeptTensor&>().tensor);
      borrowed.emplace_back();
    } else {
      raw.push_back(ToRaw(h.cast<py::tuple>()));
      args.push_back(Borrow(raw.back()));
      borrowed.push_back(args.back());
    }
  }
  const size_t num_saved = args.size();
  for (const py::handle& h : tangents) {
    raw.push_back(ToRaw(h.cast<py::tuple>()));
    args.push_back(Borrow(raw.back()));
    borrowed.push_back(args.back());
  }
  absl::StatusOr<CompiledFunction::Gradients> grads;
  {
    py::gil_scoped_release release;
    grads = f.cached()->Backward({args.begin(), args.begin() + num_saved},
                                 {args.begin() + num_saved, args.end()});
  }
  Check(grads.status());
  auto convert = [&](const std::vector<std::optional<Tensor>>& gs) {
    py::list out;
    for (const std::optional<Tensor>& g : gs) {
      if (g.has_value()) {
        out.append(ToPython(*g, borrowed, raw));
      } else {
        out.append(py::none());
      }
    }
    return out;
  };
  return py::make_tuple(convert(grads->inputs),
                        convert(grads->synthetic_bases));
}

}  // namespace
}  // namespace aotcache

PYBIND11_MODULE(_core, m) {
  m.doc() =
      "aotcache's C++ client and runtime, torch-free (see aotcache.torch).";
  py::class_<aotcache::KeptTensor>(m, "KeptTensor");
  aotcache::BindClient(m)
      .def("run_forward", &aotcache::RunForward, py::arg("inputs"),
           py::arg("seed") = 0, py::arg("keep_from") = -1)
      .def("run_backward", &aotcache::RunBackward, py::arg("saved"),
           py::arg("tangents"));
}
