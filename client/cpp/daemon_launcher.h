// Starting the default daemon on behalf of a client that found none, as
// sccache does: find the aotcached binary, start it detached from the
// client (its own session, stdio on /dev/null and a log file in the data
// dir) with an idle timeout, serving only the unix socket in its data dir.
// Thread-safety: functions only; FindAotcached reads the environment.
#ifndef AOTCACHE_CLIENT_CPP_DAEMON_LAUNCHER_H_
#define AOTCACHE_CLIENT_CPP_DAEMON_LAUNCHER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace aotcache {

// $AOTCACHED if set, else `aotcached` beside the running executable, else
// the first `aotcached` on PATH. NotFound names the places searched.
// `packaged`, when not empty, is tried after $AOTCACHED and before the
// binary's dir (the daemon a package ships beside itself: the Python
// package's, whose executable is the interpreter).
absl::StatusOr<std::string> FindAotcached(const std::string& packaged = "");

// Starts `binary` for `data_dir` and returns once it is forked off; the
// caller waits for the socket. Two clients racing here are harmless: the
// second daemon finds the store locked and exits at once.
absl::Status LaunchDetachedDaemon(const std::string& binary,
                                  const std::string& data_dir,
                                  absl::Duration idle_exit);

}  // namespace aotcache

#endif  // AOTCACHE_CLIENT_CPP_DAEMON_LAUNCHER_H_
