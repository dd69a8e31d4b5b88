// Where aotcache keeps its data, shared by the daemon and every client so
// that a client with no server configured finds the daemon's socket.
// Thread-safety: the functions read the environment; call them while no
// other thread changes it.
#ifndef AOTCACHE_CORE_PATHS_DATA_DIR_H_
#define AOTCACHE_CORE_PATHS_DATA_DIR_H_

#include <string>

namespace aotcache {

// $XDG_CACHE_HOME/aotcache, else ~/.cache/aotcache.
std::string DefaultDataDir();

// The unix socket every daemon serves, inside its data dir.
std::string SocketPath(const std::string& data_dir);

// The gRPC target a client uses: `server` if not empty, else
// $AOTCACHE_SERVER, else the unix socket in the default data dir.
std::string ResolveServerTarget(const std::string& server);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_PATHS_DATA_DIR_H_
