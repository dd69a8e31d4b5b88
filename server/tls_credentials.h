// The daemon's TLS: the credentials of its TCP listener from certificate
// files (--tls_cert, --tls_key, and --tls_client_ca for mTLS), which gRPC
// reads again every `reload_interval`, so that renewed certificates are
// served without a restart.
// Thread-safety: functions only.
#ifndef AOTCACHE_SERVER_TLS_CREDENTIALS_H_
#define AOTCACHE_SERVER_TLS_CREDENTIALS_H_

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/security/server_credentials.h"

namespace aotcache {

struct TlsOptions {
  std::string cert_file;  // PEM: the certificate chain. Empty: no TLS.
  std::string key_file;   // PEM: its private key.
  // PEM: the CAs whose client certificates are accepted; empty: clients
  // need none. With one, every TCP client must present a certificate it
  // signed (mTLS).
  std::string client_ca_file;
  std::chrono::seconds reload_interval{60};

  bool enabled() const { return !cert_file.empty(); }
};

// The listener's credentials, after checking that the files parse and the
// key is the certificate's (FailedPrecondition naming the file otherwise:
// a daemon does not start with TLS it cannot serve).
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TlsServerCredentials(
    const TlsOptions& options);

}  // namespace aotcache

#endif  // AOTCACHE_SERVER_TLS_CREDENTIALS_H_
