// aotcached under a client that opens TCP connections and never finishes
// them (half of the HTTP/2 preface each): once, the daemon ran out of
// descriptors and gRPC's listeners stopped accepting for good, the unix
// socket's included. Now the daemon's descriptors stay bounded, the unix
// socket answers throughout, the half-open connections are closed after the
// idle timeout, and TCP clients are served again afterwards.
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "server/connection_gate.h"
#include "server/daemon.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::aotcache::testing::TempDir;

int OpenDescriptors() {
  int n = 0;
  for (const auto& f : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)f;
    ++n;
  }
  return n;
}

int HalfOpenConnection(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  const char half[] = "PRI * HTTP/2.0\r\n";  // Of a 24-byte preface.
  (void)!send(fd, half, sizeof half - 1, MSG_NOSIGNAL);
  return fd;
}

// Whether the daemon closed `fd` (reads end of file or a reset).
bool ClosedByPeer(int fd) {
  char buffer[256];
  for (;;) {
    ssize_t n = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
  }
}

grpc::Status Stats(const std::string& target) {
  auto admin = v1::AdminService::NewStub(
      grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::StatsResponse stats;
  return admin->Stats(&ctx, v1::StatsRequest(), &stats);
}

TEST(ConnectionLimitsTest, HalfOpenConnectionsCannotStarveTheDaemon) {
  TempDir dir;
  DaemonOptions options;
  options.data_dir = dir.path();
  options.backend_name = "reference";
  options.connections.max_per_peer = 8;
  options.connections.max_total = 16;
  options.idle_connection_timeout = std::chrono::seconds(1);
  auto daemon = Daemon::Start(options);
  ASSERT_THAT(daemon, IsOk());
  const std::string tcp = absl::StrCat("127.0.0.1:", (*daemon)->port());
  const std::string unix_socket = "unix:" + (*daemon)->socket_path();
  ASSERT_THAT(Stats(tcp), IsOk());

  const int before = OpenDescriptors();
  std::vector<int> attack;
  for (int i = 0; i < 300; ++i) {
    int fd = HalfOpenConnection((*daemon)->port());
    if (fd >= 0) attack.push_back(fd);
  }
  ASSERT_EQ(attack.size(), 300u);
  // This process holds the attacker's 300 ends; the daemon at most its
  // per-peer limit of the others (and a few of its own).
  EXPECT_LE(OpenDescriptors() - before, 300 + 8 + 4);
  grpc::Status st = Stats(unix_socket);
  EXPECT_THAT(st, IsOk());

  // The ones it took are closed after the idle timeout.
  int closed = 0;
  testing::WaitUntil(
      [&] {
        closed = 0;
        for (int fd : attack) closed += ClosedByPeer(fd);
        return closed == 300;
      },
      absl::Seconds(20), absl::Milliseconds(200));
  EXPECT_EQ(closed, 300);
  for (int fd : attack) close(fd);

  // And TCP clients are served again (the gate counts a closed connection
  // out within a second).
  testing::WaitUntil([&] { return (st = Stats(tcp)).ok(); }, absl::Seconds(5),
                     absl::Milliseconds(250));
  EXPECT_THAT(st, IsOk());
}

TEST(ConnectionLimitsTest, TheOpenFileLimitIsRaisedToItsHardLimit) {
  struct rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  if (saved.rlim_max < 1024) GTEST_SKIP() << "hard limit too low to lower";
  struct rlimit lowered = saved;
  lowered.rlim_cur = 512;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);
  EXPECT_EQ(RaiseOpenFileLimit(), static_cast<int64_t>(saved.rlim_max));
  setrlimit(RLIMIT_NOFILE, &saved);
}

}  // namespace
}  // namespace aotcache
