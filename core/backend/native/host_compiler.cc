#include "core/backend/native/host_compiler.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "core/paths/private_dir.h"
#include "core/paths/read_file.h"

namespace aotcache {
namespace {

// The compiler could not write its files: another try, after space is
// freed, may pass (so no failure memory keeps it), and the caller can
// compile elsewhere meanwhile.
absl::Status DiskFull(const std::string& dir) {
  return absl::UnavailableError(
      absl::StrCat("no space left for the C++ compiler's files in ", dir));
}

// Whether the file system of `dir` has too little room left for a compile's
// files (a source, objects, a shared object).
bool NearlyFull(const std::string& dir) {
  constexpr uintmax_t kRoomForACompile = uintmax_t{16} << 20;
  std::error_code ec;
  std::filesystem::space_info space = std::filesystem::space(dir, ec);
  return !ec && space.available < kRoomForACompile;
}

// A directory removed, with everything in it, when this goes away.
class PrivateDir {
 public:
  static absl::StatusOr<PrivateDir> Make(const std::string& root) {
    std::string parent = root;
    if (parent.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      parent = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
    }
    // In a dir another user could write, they could swap the compiler's
    // output for code every client of the artifact runs.
    if (absl::Status st = CheckNobodyElseWrites(parent); !st.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the compiler's temporary root: ", st.message()));
    }
    std::string tmpl = parent + "/aotcache-cc-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      if (errno == ENOSPC) return DiskFull(parent);
      return absl::FailedPreconditionError(
          absl::StrCat("cannot make a temporary directory in ", parent, ": ",
                       std::strerror(errno)));
    }
    return PrivateDir(tmpl);
  }
  PrivateDir(PrivateDir&& other) : path_(std::move(other.path_)) {
    other.path_.clear();
  }
  ~PrivateDir() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  explicit PrivateDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

struct Exit {
  bool timed_out = false;
  bool cancelled = false;
  int status = 0;  // From waitpid.
};

// Bumped by CancelHostCompiles: a compile started in an earlier epoch is
// killed.
std::atomic<int64_t> cancel_epoch{0};

// Holds one of the process's MaxConcurrentCompilers slots.
class CompilerSlot {
 public:
  CompilerSlot() {
    mu().LockWhen(absl::Condition(
        +[](int* running) { return *running < MaxConcurrentCompilers(); },
        &running()));
    ++running();
    mu().Unlock();
  }
  ~CompilerSlot() {
    absl::MutexLock lock(&mu());
    --running();
  }

 private:
  static absl::Mutex& mu() {
    static absl::Mutex* const m = new absl::Mutex();
    return *m;
  }
  static int& running() {
    static int n = 0;
    return n;
  }
};

// Runs argv with stdout and stderr into `log`, in a process group of its
// own; kills the group at `timeout` or when CancelHostCompiles is called
// after `epoch` (cancel_epoch when the caller began).
absl::StatusOr<Exit> Run(const std::vector<std::string>& argv,
                         const std::string& log, absl::Duration timeout,
                         int64_t epoch) {
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null",
                                   O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // A group of its own, to kill.
  pid_t pid = 0;
  int err = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (err != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot run the C++ compiler '", argv[0], "': ", std::strerror(err)));
  }
  Exit exit;
  absl::Time deadline = absl::Now() + timeout;
  while (waitpid(pid, &exit.status, WNOHANG) != pid) {
    exit.timed_out = absl::Now() >= deadline;
    exit.cancelled = cancel_epoch.load() != epoch;
    if (exit.timed_out || exit.cancelled) {
      kill(-pid, SIGKILL);
      waitpid(pid, &exit.status, 0);
      break;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  return exit;
}

// Whether `program` (a path, or a name looked up on PATH) is executable.
bool IsExecutableOnPath(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    return access(program.c_str(), X_OK) == 0;
  }
  const char* path = std::getenv("PATH");
  for (absl::string_view dir :
       absl::StrSplit(path != nullptr ? path : "", ':', absl::SkipEmpty())) {
    if (access(absl::StrCat(dir, "/", program).c_str(), X_OK) == 0) {
      return true;
    }
  }
  return false;
}

// The command that runs `compiler_argv` within the options' limits (and
// sandbox), in the private directory `dir`.
std::vector<std::string> Confined(const HostCompilerOptions& options,
                                  const std::string& dir,
                                  std::vector<std::string> compiler_argv) {
  const int64_t cpu_seconds = absl::ToInt64Seconds(options.timeout) + 1;
  std::vector<std::string> argv = {
      "prlimit", absl::StrCat("--as=", options.memory_limit_bytes),
      absl::StrCat("--fsize=", int64_t{1} << 30),
      absl::StrCat("--cpu=", cpu_seconds), "--"};
  if (options.sandbox == Sandbox::kBubblewrap) {
    argv.insert(argv.end(), {"bwrap",
                             "--ro-bind",
                             "/",
                             "/",
                             "--dev",
                             "/dev",
                             "--proc",
                             "/proc",
                             "--tmpfs",
                             "/tmp",
                             "--bind",
                             dir,
                             dir,
                             "--unshare-all",
                             "--die-with-parent",
                             "--new-session",
                             "--setenv",
                             "TMPDIR",
                             dir,
                             "--chdir",
                             dir,
                             "--"});
  }
  argv.insert(argv.end(), compiler_argv.begin(), compiler_argv.end());
  return argv;
}

}  // namespace

int MaxConcurrentCompilers() {
  static const int n =
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return n;
}

void CancelHostCompiles() { ++cancel_epoch; }

absl::StatusOr<std::string> CompileSharedObject(
    const std::string& source, const HostCompilerOptions& options) {
  // Run through prlimit (and bwrap), whose failure to start the compiler is
  // only an exit status: a missing compiler is found here instead.
  if (!IsExecutableOnPath(options.compiler)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot run the C++ compiler '", options.compiler, "': not found"));
  }
  // A compile waiting for a compiler when CancelHostCompiles is called is
  // cancelled too (at a drain deadline, none may start after).
  const int64_t epoch = cancel_epoch.load();
  absl::StatusOr<PrivateDir> dir = PrivateDir::Make(options.temp_root);
  if (!dir.ok()) return dir.status();
  const std::string src = dir->path() + "/kernels.cc";
  const std::string out = dir->path() + "/kernels.so";
  const std::string log = dir->path() + "/compiler.log";
  {
    std::ofstream f(src, std::ios::binary);
    f << source;
    if (!f) {
      if (NearlyFull(dir->path())) return DiskFull(dir->path());
      return absl::FailedPreconditionError("cannot write " + src);
    }
  }
  std::vector<std::string> compiler = {options.compiler};
  compiler.insert(compiler.end(), options.flags.begin(), options.flags.end());
  compiler.insert(compiler.end(), {"-shared", "-fPIC", "-o", out, src});
  compiler.insert(compiler.end(), options.libraries.begin(),
                  options.libraries.end());
  std::vector<std::string> argv =
      Confined(options, dir->path(), std::move(compiler));
  CompilerSlot slot;
  absl::StatusOr<Exit> exit = Exit{/*timed_out=*/false, /*cancelled=*/true};
  if (cancel_epoch.load() == epoch)
    exit = Run(argv, log, options.timeout, epoch);
  if (!exit.ok()) return exit.status();
  if (exit->cancelled) {
    return absl::CancelledError("the C++ compiler was stopped: shutting down");
  }
  if (exit->timed_out) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the C++ compiler ran past ",
                     absl::FormatDuration(options.timeout), " and was killed"));
  }
  if (!WIFEXITED(exit->status) || WEXITSTATUS(exit->status) != 0) {
    if (NearlyFull(dir->path())) return DiskFull(dir->path());
    return absl::InternalError(absl::StrCat("the C++ compiler failed (",
                                            absl::StrJoin(argv, " "), "):\n",
                                            ReadFile(log).value_or("")));
  }
  // A compiler that exits 0 without its output (or with an empty one) has
  // failed all the same: an empty shared object is no artifact.
  absl::StatusOr<std::string> so = ReadFile(out);
  if (!so.ok() || so->empty()) {
    return absl::InternalError(
        absl::StrCat("the C++ compiler exited 0 but left ",
                     so.ok() ? "an empty shared object" : so.status().message(),
                     ":\n", ReadFile(log).value_or("")));
  }
  return so;
}

absl::StatusOr<std::string> HostCompilerVersion(const std::string& compiler) {
  absl::StatusOr<PrivateDir> dir = PrivateDir::Make("");
  if (!dir.ok()) return dir.status();
  const std::string log = dir->path() + "/version.log";
  absl::StatusOr<Exit> exit =
      Run({compiler, "--version"}, log, absl::Seconds(30), cancel_epoch.load());
  if (!exit.ok()) return exit.status();
  if (exit->timed_out || !WIFEXITED(exit->status) ||
      WEXITSTATUS(exit->status) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", compiler, " --version' failed"));
  }
  std::string text = ReadFile(log).value_or("");
  return text.substr(0, text.find('\n'));
}

}  // namespace aotcache
