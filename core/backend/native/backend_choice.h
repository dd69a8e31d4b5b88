// ChooseBackend: the backend a name asks for, as the daemon, the client's
// in-process fallback and `aotcache analyze` all choose it: "reference";
// "native"; or "auto": native when this machine's compiler builds and
// links a kernel, else reference. And the host compiler's default options
// ($AOTCACHE_CXX, else c++ on PATH).
// Thread-safety: pure functions (the environment is read, not written).
#ifndef AOTCACHE_CORE_BACKEND_NATIVE_BACKEND_CHOICE_H_
#define AOTCACHE_CORE_BACKEND_NATIVE_BACKEND_CHOICE_H_

#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/backend/backend.h"
#include "core/backend/native/host_compiler.h"
#include "core/backend/native/native_backend.h"

namespace aotcache {

// The backend `name` asks for; `make_native` makes the native one (e.g.
// NativeBackend::CreateChecked). InvalidArgument for another name, or when
// make_native says so; for "native", make_native's failure; for "auto"
// with a native backend that cannot run here, the reference backend, and
// `*why_reference` (when given) says why.
absl::StatusOr<std::unique_ptr<Backend>> ChooseBackend(
    absl::string_view name,
    absl::FunctionRef<absl::StatusOr<std::unique_ptr<NativeBackend>>()>
        make_native,
    std::string* why_reference = nullptr);

// HostCompilerOptions with the compiler $AOTCACHE_CXX names, if set.
HostCompilerOptions HostCompilerFromEnvironment();

}  // namespace aotcache

#endif  // AOTCACHE_CORE_BACKEND_NATIVE_BACKEND_CHOICE_H_
