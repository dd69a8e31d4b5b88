// Test certificates made by the openssl CLI: a CA, a server certificate for
// 127.0.0.1 and localhost, client certificates it signed, and a second CA
// with its own server and client certificates (what a wrong CA signed).
// Thread-safety: a function only; each call makes its own files.
#ifndef AOTCACHE_TESTS_TESTING_TEST_CERTIFICATES_H_
#define AOTCACHE_TESTS_TESTING_TEST_CERTIFICATES_H_

#include <string>

#include "absl/status/statusor.h"

namespace aotcache::testing {

struct KeyPair {
  std::string cert;  // PEM file paths.
  std::string key;
};

struct TestCertificates {
  std::string ca;        // The CA's certificate.
  KeyPair server;        // CN=localhost, SAN IP:127.0.0.1, DNS:localhost.
  KeyPair trainer;       // A client, CN=trainer.
  KeyPair intern;        // A client, CN=intern.
  std::string other_ca;  // Another CA.
  KeyPair other_server;  // The same names, signed by the other CA.
  KeyPair stranger;      // A client the other CA signed, CN=stranger.
};

// Makes them in `dir`; Internal naming the openssl command that failed.
absl::StatusOr<TestCertificates> MakeTestCertificates(const std::string& dir);

}  // namespace aotcache::testing

#endif  // AOTCACHE_TESTS_TESTING_TEST_CERTIFICATES_H_
