#include "server/connection_gate.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "grpcpp/server_posix.h"

namespace aotcache {
namespace {

// "host:port" or "[v6]:port" split; false when it does not parse.
bool SplitHostPort(const std::string& address, std::string* host,
                   std::string* port) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size()) return false;
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  int number = 0;
  return absl::SimpleAtoi(*port, &number) && number >= 0 && number < 65536;
}

std::string PeerAddress(const sockaddr_storage& peer) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (peer.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(peer).sin_addr,
              text, sizeof text);
  } else if (peer.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(peer).sin6_addr,
              text, sizeof text);
  }
  return text;
}

ino_t InodeOf(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

}  // namespace

bool IsLoopbackAddress(const std::string& address) {
  std::string host, port;
  if (!SplitHostPort(address, &host, &port) || host.empty()) return false;
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) {
    return false;
  }
  bool loopback = found != nullptr;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      loopback &= (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    } else if (a->ai_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      loopback &= IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) != 0;
    } else {
      loopback = false;
    }
  }
  freeaddrinfo(found);
  return loopback;
}

int64_t RaiseOpenFileLimit() {
  struct rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  return static_cast<int64_t>(limit.rlim_cur);
}

absl::StatusOr<std::unique_ptr<ConnectionGate>> ConnectionGate::Listen(
    const std::string& address, ConnectionLimits limits) {
  std::string host, port;
  if (!SplitHostPort(address, &host, &port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen address '", address, "' is not host:port"));
  }
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  int err = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(),
                        &hints, &found);
  if (err != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen address '", address,
                     "' does not resolve: ", gai_strerror(err)));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> list(found, freeaddrinfo);
  int fd = socket(found->ai_family,
                  found->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address, ": ", std::strerror(errno)));
  }
  // Not SO_REUSEPORT: a second daemon must not share the port.
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, found->ai_addr, found->ai_addrlen) != 0 ||
      listen(fd, SOMAXCONN) != 0) {
    const int bind_errno = errno;
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address, ": ",
                     bind_errno == EADDRINUSE ? "the port is in use"
                                              : std::strerror(bind_errno)));
  }
  sockaddr_storage bound = {};
  socklen_t length = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  const int bound_port =
      ntohs(bound.ss_family == AF_INET6
                ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                : reinterpret_cast<sockaddr_in&>(bound).sin_port);
  return std::unique_ptr<ConnectionGate>(
      new ConnectionGate(fd, bound_port, limits));
}

ConnectionGate::ConnectionGate(int listen_fd, int port, ConnectionLimits limits)
    : listen_fd_(listen_fd), port_(port), limits_(limits) {}

ConnectionGate::~ConnectionGate() { Stop(); }

void ConnectionGate::Start(grpc::Server* server) {
  server_ = server;
  if (pipe2(wake_, O_CLOEXEC) != 0) wake_[0] = wake_[1] = -1;
  loop_ = std::thread([this] { AcceptLoop(); });
}

void ConnectionGate::Stop() {
  if (loop_.joinable()) {
    if (wake_[1] >= 0) (void)!write(wake_[1], "x", 1);
    loop_.join();
  }
  // Closed, not left listening: a new client is refused at once instead of
  // waiting in the backlog for its deadline.
  for (int* fd : {&listen_fd_, &wake_[0], &wake_[1]}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

int64_t ConnectionGate::refused() const {
  absl::MutexLock lock(&mu_);
  return refused_;
}

void ConnectionGate::Prune() {
  auto closed = [&](const Connection& c) {
    if (InodeOf(c.fd) == c.inode) return false;
    if (--per_peer_[c.peer] == 0) per_peer_.erase(c.peer);
    return true;
  };
  open_.erase(std::remove_if(open_.begin(), open_.end(), closed), open_.end());
}

void ConnectionGate::AcceptLoop() {
  int64_t logged_refusals = 0;
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    poll(fds, wake_[0] >= 0 ? 2 : 1, 1000);
    if (fds[1].revents != 0) return;
    absl::MutexLock lock(&mu_);
    Prune();
    for (;;) {
      sockaddr_storage peer = {};
      socklen_t length = sizeof peer;
      int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &length,
                       SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE) {
          // Out of descriptors all the same (another part of the process):
          // the loop waits and tries again, never gives up.
          LOG_EVERY_N(WARNING, 100) << "accept: " << std::strerror(errno);
        }
        break;
      }
      std::string address = PeerAddress(peer);
      int& from_peer = per_peer_[address];
      if (from_peer >= limits_.max_per_peer ||
          static_cast<int>(open_.size()) >= limits_.max_total) {
        close(fd);
        if (from_peer == 0) per_peer_.erase(address);
        if (refused_++ == logged_refusals) {
          LOG(WARNING) << "connection from " << address
                       << " closed: " << from_peer << " open from it, "
                       << open_.size() << " in all (limits "
                       << limits_.max_per_peer << ", " << limits_.max_total
                       << "); refused so far: " << refused_;
          logged_refusals = logged_refusals * 2 + 1;  // Now and then.
        }
        continue;
      }
      ++from_peer;
      // As gRPC's own listener sets them: non-blocking (its reads would
      // block a poller thread otherwise), no Nagle delay.
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      open_.push_back(Connection{fd, InodeOf(fd), address});
      grpc::AddInsecureChannelFromFd(server_, fd);
    }
  }
}

}  // namespace aotcache
