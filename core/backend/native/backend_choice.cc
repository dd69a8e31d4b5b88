#include "core/backend/native/backend_choice.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "core/backend/reference_backend.h"

namespace aotcache {

absl::StatusOr<std::unique_ptr<Backend>> ChooseBackend(
    absl::string_view name,
    absl::FunctionRef<absl::StatusOr<std::unique_ptr<NativeBackend>>()>
        make_native,
    std::string* why_reference) {
  if (name == "reference") return std::make_unique<ReferenceBackend>();
  if (name != "native" && name != "auto") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown backend '", name, "' (available: auto, native, reference)"));
  }
  absl::StatusOr<std::unique_ptr<NativeBackend>> native = make_native();
  if (native.ok()) return std::unique_ptr<Backend>(*std::move(native));
  if (name == "native" || absl::IsInvalidArgument(native.status())) {
    return native.status();
  }
  if (why_reference != nullptr) {
    *why_reference = std::string(native.status().message());
  }
  return std::make_unique<ReferenceBackend>();
}

HostCompilerOptions HostCompilerFromEnvironment() {
  HostCompilerOptions options;
  const char* cxx = std::getenv("AOTCACHE_CXX");
  if (cxx != nullptr && *cxx != '\0') options.compiler = cxx;
  return options;
}

}  // namespace aotcache
