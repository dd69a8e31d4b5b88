// Reading tests/fixtures/values: the inputs a scenario was run on and what
// torch eager computed, as runtime Tensors.
// Thread-safety: functions only.
#ifndef AOTCACHE_TESTS_TESTING_VALUE_FIXTURES_H_
#define AOTCACHE_TESTS_TESTING_VALUE_FIXTURES_H_

#include <string>
#include <vector>

#include "core/runtime/tensor.h"
#include "google/protobuf/struct.pb.h"

namespace aotcache::testing {

struct EagerRun {
  std::vector<Tensor> inputs;        // Fresh memory, as before the call.
  std::vector<Tensor> outputs;       // Eager's outputs (contiguous).
  std::vector<Tensor> inputs_after;  // Each input after the call (contiguous).
  std::vector<Meta> layout_after;    // Each input's layout after the call.
  std::vector<int> output_aliases_input;  // Per output: an input index or -1.
  bool uses_rng = false;
};

EagerRun LoadEagerRun(const std::string& graph_file);

// A fixture JSON file (relative to tests/fixtures) as a Struct.
google::protobuf::Struct LoadJsonFixture(const std::string& relative);
// {"shape", "dtype", "data": base64} as a contiguous tensor.
Tensor DecodeTensorValue(const google::protobuf::Struct& value);

// Compares values (NaN equals NaN); float32 within rtol 1e-5 + atol 1e-6,
// float64 within 1e-10 + 1e-12. Returns a description of the first
// difference, or "" when they match.
std::string CompareValues(const Tensor& got, const Tensor& want);

}  // namespace aotcache::testing

#endif  // AOTCACHE_TESTS_TESTING_VALUE_FIXTURES_H_
