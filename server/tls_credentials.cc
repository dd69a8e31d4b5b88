#include "server/tls_credentials.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace aotcache {
namespace {

// OpenSSL's last error, as text.
std::string OpenSslError() {
  unsigned long code = ERR_get_error();  // NOLINT(runtime/int): OpenSSL's.
  ERR_clear_error();
  if (code == 0) return "no detail";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

absl::Status CheckFiles(const TlsOptions& options) {
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(
      SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (ctx == nullptr) return absl::InternalError("OpenSSL: " + OpenSslError());
  auto fail = [](const std::string& what, const std::string& file) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " ", file, ": ", OpenSslError()));
  };
  if (options.key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert needs --tls_key");
  }
  if (SSL_CTX_use_certificate_chain_file(ctx.get(),
                                         options.cert_file.c_str()) != 1) {
    return fail("TLS certificate", options.cert_file);
  }
  std::unique_ptr<FILE, decltype(&fclose)> key_file(
      fopen(options.key_file.c_str(), "r"), fclose);
  if (key_file == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("TLS key ", options.key_file, ": cannot read it"));
  }
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_PrivateKey(key_file.get(), nullptr, nullptr, nullptr),
      EVP_PKEY_free);
  if (key == nullptr) return fail("TLS key", options.key_file);
  if (X509_check_private_key(SSL_CTX_get0_certificate(ctx.get()), key.get()) !=
      1) {
    ERR_clear_error();
    return absl::FailedPreconditionError(
        absl::StrCat("TLS key ", options.key_file,
                     " does not match the certificate ", options.cert_file));
  }
  if (!options.client_ca_file.empty() &&
      SSL_CTX_load_verify_locations(ctx.get(), options.client_ca_file.c_str(),
                                    nullptr) != 1) {
    return fail("TLS client CA", options.client_ca_file);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TlsServerCredentials(
    const TlsOptions& options) {
  if (absl::Status checked = CheckFiles(options); !checked.ok()) {
    return checked;
  }
  auto provider =
      std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
          options.key_file, options.cert_file, options.client_ca_file,
          static_cast<unsigned int>(options.reload_interval.count()));
  grpc::experimental::TlsServerCredentialsOptions tls(provider);
  tls.watch_identity_key_cert_pairs();
  if (options.client_ca_file.empty()) {
    tls.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  } else {
    tls.watch_root_certs();
    tls.set_cert_request_type(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  }
  return grpc::experimental::TlsServerCredentials(tls);
}

}  // namespace aotcache
