// TLS and mTLS with certificates the openssl CLI made: a real daemon on
// loopback, reached by aotcache::Client (tls://, a token, the CA) and by
// bare gRPC channels with the wrong credentials.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "client/cpp/client.h"
#include "core/key/digest.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "server/daemon.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_certificates.h"
#include "tests/testing/wait.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::aotcache::testing::KeyPair;
using ::aotcache::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kBuilderToken[] = "builder-token-0123456789";
constexpr char kReaderToken[] = "reader-token-0123456789";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(certs_,
                         testing::MakeTestCertificates(certs_dir_.path()));
  }

  // Starts the daemon on 127.0.0.1:0 with TLS (mTLS with `client_ca`) and,
  // when `tokens` is not empty, that tokens file.
  void StartDaemon(const std::string& client_ca, const std::string& tokens) {
    DaemonOptions options;
    options.data_dir = data_dir_.path();
    options.backend_name = "reference";
    options.tls.cert_file = certs_.server.cert;
    options.tls.key_file = certs_.server.key;
    options.tls.client_ca_file = client_ca;
    options.tls.reload_interval = std::chrono::seconds(1);
    options.handshake_timeout = handshake_timeout_;
    if (!tokens.empty()) {
      options.tokens_file = certs_dir_.path() + "/tokens";
      std::ofstream(options.tokens_file) << tokens;
    }
    ASSERT_OK_AND_ASSIGN(daemon_, Daemon::Start(options));
    ASSERT_NE(daemon_->port(), 0);
  }

  std::string Address() const {
    return absl::StrCat("127.0.0.1:", daemon_->port());
  }

  // A Client for tls://, the reference backend in process.
  std::unique_ptr<Client> TlsClient(const std::string& token,
                                    const KeyPair* certificate = nullptr) {
    ClientOptions options;
    options.server = absl::StrCat("tls://", Address());
    options.token = token;
    options.ca_file = certs_.ca;
    if (certificate != nullptr) {
      options.cert_file = certificate->cert;
      options.key_file = certificate->key;
    }
    options.artifact_dir = "none";
    options.max_attempts = 1;
    options.deadline = absl::Seconds(30);
    return std::make_unique<Client>(options);
  }

  // A Stats call over `credentials` (reaches the daemon only if the
  // handshake passes).
  grpc::Status Lookup(std::shared_ptr<grpc::ChannelCredentials> credentials) {
    auto channel = grpc::CreateChannel(Address(), credentials);
    auto stub = v1::CompileService::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(5));
    v1::LookupRequest request;
    request.set_key(std::string(32, 'k'));
    v1::LookupResponse response;
    return stub->Lookup(&context, request, &response);
  }

  grpc::SslCredentialsOptions TrustingCa(const std::string& ca) {
    grpc::SslCredentialsOptions tls;
    tls.pem_root_certs = ReadFile(ca);
    return tls;
  }

  grpc::SslCredentialsOptions WithCertificate(grpc::SslCredentialsOptions tls,
                                              const KeyPair& pair) {
    tls.pem_cert_chain = ReadFile(pair.cert);
    tls.pem_private_key = ReadFile(pair.key);
    return tls;
  }

  v1::Graph Graph() const {
    return testing::LoadGraphOrDie("graphs/mlp_mse__rg.json");
  }

  testing::TempDir certs_dir_;
  testing::TempDir data_dir_;
  testing::TestCertificates certs_;
  std::chrono::milliseconds handshake_timeout_ = std::chrono::seconds(10);
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(TlsTest, AClientWithTheCaAndATokenCompilesOverTls) {
  StartDaemon("", absl::StrCat("builders read,compile ",
                               Sha256Hex(kBuilderToken), "\n"));
  std::unique_ptr<Client> client = TlsClient(kBuilderToken);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CachedFunction> f,
                       client->Compile(Graph()));
  EXPECT_EQ(f->source(), Source::kServer) << f->fallback_reason();
  EXPECT_EQ(f->status(), v1::COMPILE_STATUS_MISS);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CachedFunction> again,
                       client->Compile(Graph()));
  EXPECT_EQ(again->status(), v1::COMPILE_STATUS_HIT);

  // No token over TLS: the daemon answers, and refuses.
  EXPECT_THAT(Lookup(grpc::SslCredentials(TrustingCa(certs_.ca))),
              StatusIs(absl::StatusCode::kUnauthenticated,
                       HasSubstr("needs the read scope")));
}

TEST_F(TlsTest, PlaintextAndUntrustedServersAreRefusedAtTheHandshake) {
  StartDaemon("", "");
  EXPECT_THAT(Lookup(grpc::SslCredentials(TrustingCa(certs_.ca))),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("")));
  EXPECT_THAT(Lookup(grpc::InsecureChannelCredentials()),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("")));
  // A client that trusts another CA does not take this server.
  EXPECT_THAT(Lookup(grpc::SslCredentials(TrustingCa(certs_.other_ca))),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("")));
}

TEST_F(TlsTest, MutualTlsAdmitsOnlyCertificatesTheClientCaSigned) {
  StartDaemon(certs_.ca, "");
  const grpc::SslCredentialsOptions trusting = TrustingCa(certs_.ca);
  EXPECT_THAT(
      Lookup(grpc::SslCredentials(WithCertificate(trusting, certs_.trainer))),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("")));
  EXPECT_THAT(Lookup(grpc::SslCredentials(trusting)),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("")));
  EXPECT_THAT(
      Lookup(grpc::SslCredentials(WithCertificate(trusting, certs_.stranger))),
      StatusIs(absl::StatusCode::kUnavailable, HasSubstr("")));
}

TEST_F(TlsTest, ACertificatesGrantComesFromTheTokensFile) {
  StartDaemon(certs_.ca, "trainers read x509:trainer\n");
  std::unique_ptr<Client> trainer = TlsClient("", &certs_.trainer);
  // Read only: the miss is compiled in process, and says why.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CachedFunction> f,
                       trainer->Compile(Graph()));
  EXPECT_EQ(f->source(), Source::kInProcess);
  EXPECT_THAT(f->fallback_reason(), AllOf(HasSubstr("needs the compile scope"),
                                          HasSubstr("'trainers'")));
  EXPECT_EQ(daemon_->cache().counters().misses_not_compiled, 1);

  const grpc::SslCredentialsOptions trusting = TrustingCa(certs_.ca);
  EXPECT_THAT(
      Lookup(grpc::SslCredentials(WithCertificate(trusting, certs_.intern))),
      StatusIs(absl::StatusCode::kUnauthenticated,
               HasSubstr("'intern' has no grant")));
}

TEST_F(TlsTest, AReadTokensMissCompilesInProcessAndItsHitComesFromTheServer) {
  StartDaemon("",
              absl::StrCat("builders read,compile ", Sha256Hex(kBuilderToken),
                           "\nreaders read ", Sha256Hex(kReaderToken), "\n"));
  std::unique_ptr<Client> reader = TlsClient(kReaderToken);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CachedFunction> local,
                       reader->Compile(Graph()));
  EXPECT_EQ(local->source(), Source::kInProcess);
  EXPECT_EQ(daemon_->cache().counters().misses, 0);

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CachedFunction> built,
                       TlsClient(kBuilderToken)->Compile(Graph()));
  EXPECT_EQ(built->status(), v1::COMPILE_STATUS_MISS);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CachedFunction> served,
                       reader->Compile(Graph()));
  EXPECT_EQ(served->source(), Source::kServer) << served->fallback_reason();
  EXPECT_EQ(served->status(), v1::COMPILE_STATUS_HIT);
}

TEST_F(TlsTest, AClientsUnreadableCaIsAnError) {
  StartDaemon("", "");
  ClientOptions options;
  options.server = absl::StrCat("tls://", Address());
  options.ca_file = certs_dir_.path() + "/missing.pem";
  Client client(options);
  EXPECT_THAT(client.Compile(Graph()).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("missing.pem")));
}

TEST_F(TlsTest, RenewedCertificatesAreServedWithoutARestart) {
  StartDaemon("", "");
  ASSERT_THAT(Lookup(grpc::SslCredentials(TrustingCa(certs_.ca))),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("")));
  // The files replaced as a renewal does: now the other CA signed them.
  std::filesystem::copy_file(certs_.other_server.cert, certs_.server.cert,
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(certs_.other_server.key, certs_.server.key,
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_TRUE(testing::WaitUntil(
      [&] {
        return Lookup(grpc::SslCredentials(TrustingCa(certs_.other_ca)))
                   .error_code() == grpc::StatusCode::NOT_FOUND;
      },
      absl::Seconds(20), absl::Milliseconds(200)));
}

TEST_F(TlsTest, BadFilesStopTheDaemonAtStart) {
  DaemonOptions options;
  options.data_dir = data_dir_.path();
  options.backend_name = "reference";
  options.tls.cert_file = certs_.server.cert;
  options.tls.key_file = certs_.trainer.key;
  EXPECT_THAT(Daemon::Start(options).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("does not match the certificate")));
  options.tls.key_file = certs_dir_.path() + "/none.key";
  EXPECT_THAT(
      Daemon::Start(options).status(),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("none.key")));
}

TEST_F(TlsTest, MutualTlsIsCredentialEnoughForAListenerOthersReach) {
  DaemonOptions options;
  options.data_dir = data_dir_.path();
  options.backend_name = "reference";
  options.listen = "0.0.0.0:0";
  options.tls.cert_file = certs_.server.cert;
  options.tls.key_file = certs_.server.key;
  EXPECT_THAT(Daemon::Start(options).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("without credentials")));
  options.tls.client_ca_file = certs_.ca;
  EXPECT_THAT(Daemon::Start(options), IsOk());
}

// The TLS listener is gRPC's own (the connection gate takes plaintext
// only): an unfinished TLS handshake is what bounds a connection that never
// finishes one.
TEST_F(TlsTest, AnUnfinishedHandshakeIsClosedAfterTheHandshakeTimeout) {
  handshake_timeout_ = std::chrono::seconds(1);
  StartDaemon("", "");
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(daemon_->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const char record_header[] = "\x16\x03\x01";  // Of a ClientHello.
  (void)!send(fd, record_header, 3, MSG_NOSIGNAL);
  const absl::Time start = absl::Now();
  bool closed = testing::WaitUntil(
      [&] {
        char buffer[64];
        const ssize_t n = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
      },
      absl::Seconds(8), absl::Milliseconds(50));
  close(fd);
  EXPECT_TRUE(closed);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(500));
}

}  // namespace
}  // namespace aotcache
