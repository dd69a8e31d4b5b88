// aotcached's memory under clients that send or hold too much: a real
// daemon (the aotcached binary, so that its resident size is its own), RSS
// read from /proc.
// - A dozen concurrent requests of 60 MB each against a request budget
//   (--max_bytes_in_flight) of 128 MB: once, every request was copied three
//   times before the budget was asked, and the daemon peaked at several
//   times the budget. Now the peak stays within a small multiple of the
//   budget, and the requests past it are RESOURCE_EXHAUSTED.
// - Hundreds of artifact downloads (FetchArtifact) started by clients that
//   never read their socket: what they hold counts against the same budget
//   (further downloads are RESOURCE_EXHAUSTED), and the daemon cancels
//   them at --fetch_seconds and gives it back.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "server/daemon.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::aotcache::testing::TempDir;

constexpr int64_t kMiB = int64_t{1} << 20;

// Under AddressSanitizer (scripts/sanitize) freed memory stays in its
// quarantine and every block has red zones: the resident size says nothing
// of what the daemon holds, and only the statuses are checked.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kResidentSizeIsMeaningful = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kResidentSizeIsMeaningful = false;
#else
constexpr bool kResidentSizeIsMeaningful = true;
#endif
#else
constexpr bool kResidentSizeIsMeaningful = true;
#endif

// x [n] float32 + a constant c [n] -> z, c's bytes `fill`, and `padding`
// bytes more than its shape needs (refused by validation, once admitted).
v1::CompileRequest Request(int64_t n, char fill, int64_t padding = 0) {
  v1::CompileRequest r;
  const std::string json = absl::StrCat(R"json({
    "inputs": [{"name": "x", "storage": 0, "meta": {"shape": [)json",
                                        n,
                                        R"json(], "dtype": "DTYPE_FLOAT32",
                "is_leaf": true}}],
    "storages": [{"id": 0, "size": )json",
                                        n, R"json(}],
    "constants": [{"name": "c", "meta": {"shape": [)json",
                                        n,
                                        R"json(], "dtype": "DTYPE_FLOAT32"}}],
    "nodes": [{"name": "z", "op": "aten.add.Tensor",
               "args": [{"node": "x"}, {"node": "c"}],
               "grad_mode": "GRAD_MODE_ENABLED"}],
    "outputs": ["z"]})json");
  EXPECT_TRUE(
      google::protobuf::util::JsonStringToMessage(json, r.mutable_graph())
          .ok());
  r.mutable_graph()->mutable_constants(0)->set_data(
      std::string(static_cast<size_t>(4 * n + padding), fill));
  return r;
}

// aotcached in a process of its own, on a temp data dir's unix socket;
// killed when destroyed.
class AotcachedProcess {
 public:
  explicit AotcachedProcess(std::vector<std::string> flags) {
    flags.insert(flags.begin(), {"--data_dir=" + dir_.path(),
                                 "--backend=reference", "--listen="});
    const char* binary = getenv("AOTCACHED_UNDER_TEST");
    if (binary == nullptr) binary = AOTCACHED_PATH;
    std::vector<char*> argv = {const_cast<char*>(binary)};
    for (std::string& f : flags) argv.push_back(f.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      int null_fd = open("/dev/null", O_WRONLY);
      if (null_fd >= 0) {
        dup2(null_fd, STDOUT_FILENO);
        dup2(null_fd, STDERR_FILENO);
      }
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~AotcachedProcess() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }

  std::string socket_path() const { return SocketPath(dir_.path()); }

  std::shared_ptr<grpc::Channel> Channel(
      grpc::ChannelArguments args = grpc::ChannelArguments()) const {
    args.SetMaxReceiveMessageSize(-1);
    return grpc::CreateCustomChannel("unix:" + socket_path(),
                                     grpc::InsecureChannelCredentials(), args);
  }

  // A field of /proc/<pid>/status in bytes (VmRSS, VmHWM), or -1.
  int64_t Status(const std::string& field) const {
    std::ifstream status(absl::StrCat("/proc/", pid_, "/status"));
    std::string line;
    while (std::getline(status, line)) {
      absl::string_view rest = line;
      if (!absl::ConsumePrefix(&rest, field + ":")) continue;
      rest = absl::StripAsciiWhitespace(rest);
      absl::ConsumeSuffix(&rest, " kB");
      int64_t kb = 0;
      return absl::SimpleAtoi(rest, &kb) ? kb * 1024 : -1;
    }
    return -1;
  }

 private:
  TempDir dir_;
  pid_t pid_ = -1;
};

grpc::Status Compile(v1::CompileService::Stub& stub,
                     const v1::CompileRequest& request,
                     v1::CompileResponse* response = nullptr) {
  grpc::ClientContext ctx;
  ctx.set_wait_for_ready(true);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(2));
  v1::CompileResponse ignored;
  return stub.Compile(&ctx, request, response ? response : &ignored);
}

TEST(DaemonMemoryTest, ConcurrentLargeRequestsStayNearTheBudget) {
  const int64_t budget = 128 * kMiB;
  AotcachedProcess daemon({absl::StrCat("--max_bytes_in_flight=", budget)});
  auto stub = v1::CompileService::NewStub(daemon.Channel());
  grpc::Status first = Compile(*stub, Request(3, 0));
  ASSERT_THAT(first, IsOk());
  const int64_t idle = daemon.Status("VmRSS");
  ASSERT_GT(idle, 0);

  constexpr int kRequests = 12;
  std::vector<v1::CompileRequest> requests;
  for (int i = 0; i < kRequests; ++i) {
    requests.push_back(Request(3, static_cast<char>('a' + i), 60 * kMiB));
  }
  std::vector<grpc::Status> answers(kRequests);
  std::vector<std::thread> clients;
  for (int i = 0; i < kRequests; ++i) {
    clients.emplace_back([&, i] {
      // A channel each: one connection per client, as from a build farm.
      auto own = v1::CompileService::NewStub(daemon.Channel());
      answers[i] = Compile(*own, requests[i]);
    });
  }
  for (std::thread& t : clients) t.join();
  const int64_t peak = daemon.Status("VmHWM");
  EXPECT_THAT(Compile(*stub, Request(3, 1)), IsOk());

  int admitted = 0;
  int over_budget = 0;
  for (const grpc::Status& s : answers) {
    if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
      ++admitted;
      EXPECT_NE(s.error_message().find("constant"), std::string::npos)
          << s.error_message();
    } else {
      EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
          << s.error_message();
      ++over_budget;
    }
  }
  std::cout << "idle " << idle / kMiB << " MiB, peak " << peak / kMiB
            << " MiB; " << admitted << " admitted, " << over_budget
            << " over the budget\n";
  EXPECT_GE(admitted, 1);
  if (kResidentSizeIsMeaningful) {
    EXPECT_LT(peak - idle, 3 * budget);
  }
}

// A client that never reads its socket, as a frozen or hostile one: it
// speaks just enough HTTP/2 (RFC 7540, HPACK literals of RFC 7541) to start
// FetchArtifact streams on a connection of its own, then reads nothing.
class FrozenClient {
 public:
  FrozenClient(const std::string& socket_path, const std::string& digest,
               int streams) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path.c_str());
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ADD_FAILURE() << "connect: " << strerror(errno);
      return;
    }
    std::string out = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    out += Frame(4, 0, 0, "");  // SETTINGS
    out += Frame(4, 1, 0, "");  // SETTINGS ACK of the daemon's, unread.
    v1::FetchArtifactRequest request;
    request.set_digest(digest);
    const std::string message = request.SerializeAsString();
    std::string grpc_message(5, '\0');
    grpc_message[4] = static_cast<char>(message.size());
    grpc_message += message;
    for (int i = 0; i < streams; ++i) {
      const uint32_t id = 2 * i + 1;
      std::string headers = "\x83\x86";  // :method POST, :scheme http
      headers += Literal(4, "/aotcache.v1.CompileService/FetchArtifact");
      headers += Literal(1, "localhost");          // :authority
      headers += Literal(31, "application/grpc");  // content-type
      headers += Literal(0, "trailers", "te");
      out += Frame(1, 4, id, headers);       // END_HEADERS
      out += Frame(0, 1, id, grpc_message);  // END_STREAM
    }
    EXPECT_EQ(send(fd_, out.data(), out.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(out.size()));
  }
  ~FrozenClient() {
    if (fd_ >= 0) close(fd_);
  }

 private:
  static std::string Frame(uint8_t type, uint8_t flags, uint32_t stream,
                           const std::string& payload) {
    const uint32_t n = static_cast<uint32_t>(payload.size());
    std::string f = {static_cast<char>(n >> 16),
                     static_cast<char>(n >> 8),
                     static_cast<char>(n),
                     static_cast<char>(type),
                     static_cast<char>(flags),
                     static_cast<char>(stream >> 24),
                     static_cast<char>(stream >> 16),
                     static_cast<char>(stream >> 8),
                     static_cast<char>(stream)};
    return f + payload;
  }
  // A header field "literal without indexing" (values under 127 bytes),
  // named by the static table's `index`, or by `name` when index is 0.
  static std::string Literal(int index, const std::string& value,
                             const std::string& name = "") {
    std::string h;
    if (index < 15) {
      h += static_cast<char>(index);
    } else {
      h += '\x0f';
      h += static_cast<char>(index - 15);
    }
    if (index == 0) h += static_cast<char>(name.size()) + name;
    h += static_cast<char>(value.size());
    return h + value;
  }

  int fd_ = -1;
};

TEST(DaemonMemoryTest, UnreadDownloadsAreBoundedAndCancelled) {
  const int64_t budget = 64 * kMiB;
  AotcachedProcess daemon(
      {absl::StrCat("--max_bytes_in_flight=", budget), "--fetch_seconds=2"});
  auto stub = v1::CompileService::NewStub(daemon.Channel());
  v1::CompileRequest request = Request(200000, 1);  // An 800 kB artifact.
  request.set_artifacts_by_reference(true);
  v1::CompileResponse compiled;
  grpc::Status status = Compile(*stub, request, &compiled);
  ASSERT_THAT(status, IsOk());
  v1::FetchArtifactRequest fetch;
  fetch.set_digest(compiled.forward_digest());
  const int64_t idle = daemon.Status("VmRSS");

  // Frozen clients that start 320 downloads of 800 kB, 256 MB in all.
  const absl::Time start = absl::Now();
  std::vector<std::unique_ptr<FrozenClient>> frozen;
  for (int i = 0; i < 8; ++i) {
    frozen.push_back(std::make_unique<FrozenClient>(daemon.socket_path(),
                                                    fetch.digest(), 40));
  }
  // Downloads from a client that reads are refused while the unread ones
  // hold the budget, and served again once the daemon has cancelled them.
  auto probe = [&]() -> grpc::Status {
    grpc::ClientContext ctx;
    auto reader = stub->FetchArtifact(&ctx, fetch);
    int64_t bytes = 0;
    v1::ArtifactChunk chunk;
    while (reader->Read(&chunk)) bytes += chunk.data().size();
    grpc::Status s = reader->Finish();
    if (s.ok()) {
      EXPECT_GT(bytes, 800000);
    }
    return s;
  };
  grpc::Status refused;
  while (refused.ok() && absl::Now() - start < absl::Seconds(10)) {
    refused = probe();
  }
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << refused.error_message();
  EXPECT_NE(refused.error_message().find("downloads"), std::string::npos)
      << refused.error_message();
  grpc::Status served = refused;
  testing::WaitUntil([&] { return (served = probe()).ok(); },
                     absl::Seconds(30) - (absl::Now() - start),
                     absl::Milliseconds(100));
  const absl::Duration took = absl::Now() - start;
  EXPECT_THAT(served, IsOk());
  const int64_t peak = daemon.Status("VmHWM");
  std::cout << "idle " << idle / kMiB << " MiB, peak " << peak / kMiB
            << " MiB; downloads served again after " << took << "\n";
  if (kResidentSizeIsMeaningful) {
    EXPECT_LT(peak - idle, 3 * budget);
  }
}

}  // namespace
}  // namespace aotcache
