#include "tests/testing/test_certificates.h"

#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace aotcache::testing {
namespace {

// Runs one openssl command in `dir`, quietly.
absl::Status OpenSsl(const std::string& dir, const std::string& args) {
  const std::string command =
      absl::StrCat("cd '", dir, "' && openssl ", args, " >openssl.log 2>&1");
  if (std::system(command.c_str()) != 0) {
    std::ifstream log(dir + "/openssl.log");
    std::string text((std::istreambuf_iterator<char>(log)), {});
    return absl::InternalError(
        absl::StrCat("openssl ", args, " failed: ", text));
  }
  return absl::OkStatus();
}

constexpr char kNewKey[] = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";

absl::Status MakeCa(const std::string& dir, const std::string& name) {
  return OpenSsl(
      dir, absl::StrCat("req -x509 ", kNewKey, " -keyout ", name, ".key -out ",
                        name, ".pem -days 2 -subj /CN=", name));
}

// A certificate for `name` signed by `ca`, with `extensions` (a line of
// an openssl extensions file) when not empty.
absl::StatusOr<KeyPair> Sign(const std::string& dir, const std::string& ca,
                             const std::string& file, const std::string& cn,
                             const std::string& extensions) {
  if (absl::Status made =
          OpenSsl(dir, absl::StrCat("req ", kNewKey, " -keyout ", file,
                                    ".key -out ", file, ".csr -subj /CN=", cn));
      !made.ok()) {
    return made;
  }
  std::string ext_arg;
  if (!extensions.empty()) {
    std::ofstream(absl::StrCat(dir, "/", file, ".ext")) << extensions << "\n";
    ext_arg = absl::StrCat(" -extfile ", file, ".ext");
  }
  if (absl::Status signed_ = OpenSsl(
          dir, absl::StrCat("x509 -req -in ", file, ".csr -CA ", ca,
                            ".pem -CAkey ", ca, ".key -CAcreateserial -out ",
                            file, ".pem -days 2", ext_arg));
      !signed_.ok()) {
    return signed_;
  }
  return KeyPair{absl::StrCat(dir, "/", file, ".pem"),
                 absl::StrCat(dir, "/", file, ".key")};
}

}  // namespace

absl::StatusOr<TestCertificates> MakeTestCertificates(const std::string& dir) {
  constexpr char kServerNames[] = "subjectAltName=IP:127.0.0.1,DNS:localhost";
  TestCertificates c;
  for (const char* ca : {"ca", "other_ca"}) {
    if (absl::Status made = MakeCa(dir, ca); !made.ok()) return made;
  }
  c.ca = dir + "/ca.pem";
  c.other_ca = dir + "/other_ca.pem";
  struct {
    KeyPair* pair;
    const char* ca;
    const char* file;
    const char* cn;
    const char* extensions;
  } const wanted[] = {
      {&c.server, "ca", "server", "localhost", kServerNames},
      {&c.trainer, "ca", "trainer", "trainer", ""},
      {&c.intern, "ca", "intern", "intern", ""},
      {&c.other_server, "other_ca", "other_server", "localhost", kServerNames},
      {&c.stranger, "other_ca", "stranger", "stranger", ""},
  };
  for (const auto& w : wanted) {
    absl::StatusOr<KeyPair> pair = Sign(dir, w.ca, w.file, w.cn, w.extensions);
    if (!pair.ok()) return pair.status();
    *w.pair = *std::move(pair);
  }
  return c;
}

}  // namespace aotcache::testing
