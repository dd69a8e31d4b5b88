// libFuzzer target: graph JSON through validation, analysis, keys, the
// compile plan, the reference backend and the runtime (scripts/fuzz).
#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_compile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  aotcache::fuzz::CompileGraphJson(
      std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
