// The cases of the finite-difference gradient check: one per derivative
// rule (a node or a few), plus multi-op graphs. The native backend's test
// runs the same cases on both backends.
// Thread-safety: pure functions; GradCases() is built once.
#ifndef AOTCACHE_TESTS_AUTODIFF_GRAD_CASES_H_
#define AOTCACHE_TESTS_AUTODIFF_GRAD_CASES_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "aotcache/v1/graph.pb.h"
#include "core/graph/dtype.h"

namespace aotcache {
namespace testing {

struct GradCase {
  std::string name;
  std::string shapes;       // "2x3,3": one input per entry, x0, x1, ...
  std::string nodes;        // JSON node objects; the last one's name is "out".
  bool positive = false;    // Inputs in [0.5, 1.5] (log, sqrt, ...).
  bool leaf_inputs = true;  // False: inputs are non-leaves (in-place ops).
};

void PrintTo(const GradCase& c, std::ostream* os);

const std::vector<GradCase>& GradCases();

// "2x3,scalar" as {{2, 3}, {}}.
std::vector<std::vector<int64_t>> ParseShapes(const std::string& shapes);

// The case's graph: inputs x0, x1, ... of `dtype` that require grad, its
// nodes, output "out".
v1::Graph BuildGraph(const GradCase& c, DType dtype = v1::DTYPE_FLOAT64);

}  // namespace testing
}  // namespace aotcache

#endif  // AOTCACHE_TESTS_AUTODIFF_GRAD_CASES_H_
