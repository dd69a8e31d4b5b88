#include "client/cli/token_command.h"

#include <openssl/rand.h>

#include <ostream>

#include "absl/strings/escaping.h"
#include "core/key/digest.h"
#include "server/scopes.h"

namespace aotcache {

int RunTokenCommand(const std::vector<std::string>& args, std::ostream& out,
                    std::ostream& err) {
  constexpr char kUsage[] =
      "usage: aotcache token NAME SCOPES   (SCOPES: read, compile, admin, "
      "comma-separated)\n";
  if (args.size() != 2) {
    err << kUsage;
    return 2;
  }
  if (!IsGrantName(args[0])) {
    err << "aotcache token: a name is [A-Za-z0-9._@-]+\n";
    return 2;
  }
  if (absl::StatusOr<ScopeSet> scopes = ScopeSet::Parse(args[1]);
      !scopes.ok()) {
    err << "aotcache token: " << scopes.status().message() << "\n" << kUsage;
    return 2;
  }
  unsigned char random[32];
  if (RAND_bytes(random, sizeof(random)) != 1) {
    err << "aotcache token: the system's random source failed\n";
    return 1;
  }
  const std::string token = absl::WebSafeBase64Escape(
      absl::string_view(reinterpret_cast<const char*>(random), sizeof(random)));
  out << "token (give it to its holder as AOTCACHE_TOKEN; it is not stored "
         "anywhere):\n  "
      << token << "\nits line for the tokens file (then SIGHUP the daemon):\n"
      << "  " << args[0] << " " << args[1] << " " << Sha256Hex(token) << "\n";
  return 0;
}

}  // namespace aotcache
