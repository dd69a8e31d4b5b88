// libFuzzer target: graph JSON read by the fast reader and by protobuf's
// parser, which must agree on whatever the fast reader takes
// (scripts/fuzz).
#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_compile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  aotcache::fuzz::ReadJsonBothWays(
      std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
