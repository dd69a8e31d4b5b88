#include "client/cli/token_command.h"

#include <openssl/rand.h>

#include <ostream>

#include "absl/strings/escaping.h"
#include "core/key/digest.h"
#include "server/scopes.h"

namespace aotcache {

const CommandSpec& TokenSpec() {
  static const auto* spec = new CommandSpec{
      "token",
      "NAME SCOPES",
      "a new token for --tokens_file (SCOPES: read, compile, admin, "
      "comma-separated)",
      {},
      2,
      2};
  return *spec;
}

int RunTokenCommand(const std::vector<std::string>& raw_args, std::ostream& out,
                    std::ostream& err) {
  CommandArgs command(TokenSpec(), raw_args, out, err);
  if (command.stop()) return command.exit_code();
  const std::vector<std::string>& args = command.positional();
  if (!IsGrantName(args[0])) {
    return command.Usage(
        absl::InvalidArgumentError("a name is [A-Za-z0-9._@-]+"));
  }
  if (absl::StatusOr<ScopeSet> scopes = ScopeSet::Parse(args[1]);
      !scopes.ok()) {
    return command.Usage(scopes.status());
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
