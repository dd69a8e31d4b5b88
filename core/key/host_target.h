// The Target of the machine this code runs on, for clients that compile for
// themselves (the CLI, the embedded default).
// Thread-safety: pure function.
#ifndef AOTCACHE_CORE_KEY_HOST_TARGET_H_
#define AOTCACHE_CORE_KEY_HOST_TARGET_H_

#include "aotcache/v1/analysis.pb.h"

namespace aotcache {

v1::Target HostTarget();

}  // namespace aotcache

#endif  // AOTCACHE_CORE_KEY_HOST_TARGET_H_
