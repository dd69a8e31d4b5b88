#include "client/cpp/connection.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/paths/data_dir.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace aotcache {
namespace {

constexpr absl::string_view kTlsScheme = "tls://";

void FromEnvironment(std::string* value, const char* name) {
  if (!value->empty()) return;
  const char* env = std::getenv(name);
  if (env != nullptr) *value = env;
}

absl::StatusOr<std::string> ReadPem(const std::string& path,
                                    absl::string_view what) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in || text.str().empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read ", what, " ", path));
  }
  return text.str();
}

}  // namespace

ConnectionOptions WithEnvironment(ConnectionOptions options) {
  options.server = ResolveServerTarget(options.server);
  FromEnvironment(&options.token, "AOTCACHE_TOKEN");
  FromEnvironment(&options.ca_file, "AOTCACHE_CA");
  FromEnvironment(&options.cert_file, "AOTCACHE_CLIENT_CERT");
  FromEnvironment(&options.key_file, "AOTCACHE_CLIENT_KEY");
  return options;
}

absl::StatusOr<Connection> Connection::Open(const ConnectionOptions& options) {
  Connection c;
  c.server_ = options.server;
  c.token_ = options.token;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  absl::string_view target = options.server;
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (absl::ConsumePrefix(&target, kTlsScheme)) {
    grpc::SslCredentialsOptions tls;
    if (!options.ca_file.empty()) {
      absl::StatusOr<std::string> roots =
          ReadPem(options.ca_file, "the CA file (AOTCACHE_CA)");
      if (!roots.ok()) return roots.status();
      tls.pem_root_certs = *roots;
    }
    if (options.cert_file.empty() != options.key_file.empty()) {
      return absl::InvalidArgumentError(
          "a client certificate needs both its certificate and its key "
          "(AOTCACHE_CLIENT_CERT, AOTCACHE_CLIENT_KEY)");
    }
    if (!options.cert_file.empty()) {
      absl::StatusOr<std::string> cert = ReadPem(
          options.cert_file, "the client certificate (AOTCACHE_CLIENT_CERT)");
      if (!cert.ok()) return cert.status();
      absl::StatusOr<std::string> key =
          ReadPem(options.key_file, "the client key (AOTCACHE_CLIENT_KEY)");
      if (!key.ok()) return key.status();
      tls.pem_cert_chain = *cert;
      tls.pem_private_key = *key;
    }
    credentials = grpc::SslCredentials(tls);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  c.channel_ =
      grpc::CreateCustomChannel(std::string(target), credentials, args);
  return c;
}

void Connection::Prepare(grpc::ClientContext* context,
                         absl::Duration deadline) const {
  context->set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  if (!token_.empty()) {
    context->AddMetadata("authorization", absl::StrCat("Bearer ", token_));
  }
}

}  // namespace aotcache
