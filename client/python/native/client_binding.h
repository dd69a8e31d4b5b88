// The torch-free half of aotcache's Python bindings: aotcache::Client and
// the compiled functions it answers, with their metadata, registered on a
// pybind11 module. Both extensions register it: _native (which adds runs
// over torch tensors, linking the libtorch it was built with) and _core
// (which adds runs over raw tensors, and so works with every torch).
// Thread-safety: as aotcache::Client; the GIL is released while compiling.
#ifndef AOTCACHE_CLIENT_PYTHON_NATIVE_CLIENT_BINDING_H_
#define AOTCACHE_CLIENT_PYTHON_NATIVE_CLIENT_BINDING_H_

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <utility>

#include "client/cpp/client.h"

namespace aotcache {

// A compiled function: Client::Compile's CachedFunction.
class Function {
 public:
  explicit Function(std::unique_ptr<CachedFunction> f) : f_(std::move(f)) {}

  const std::shared_ptr<CachedFunction>& cached() const { return f_; }

  std::string key() const;
  std::string mode() const;      // "training" or "inference".
  std::string status() const;    // "hit", "miss" (also in process), "bypass".
  std::string source() const;    // "server" or "in_process".
  std::string backward() const;  // "ready", "pending" or "none".
  std::string metadata_json() const;
  std::string convention_json() const;

 private:
  std::shared_ptr<CachedFunction> f_;
};

// Registers Graph, parse_graph, set_blas_threads, supported_ops,
// nondifferentiable_ops, Function and Client on `m`, and raises
// StatusErrors as aotcache.errors' classes; returns Function's class, for
// the caller's run methods.
pybind11::class_<Function> BindClient(pybind11::module_& m);

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_PYTHON_NATIVE_CLIENT_BINDING_H_
