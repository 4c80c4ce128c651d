#include "proxy_wire_harness.h"

#include "config/config_loader.h"
#include "core/block_pool.h"
#include "core/error_log.h"
#include "core/histogram_bounds.h"
#include "fake_clock.h"
#include "filters/registry.h"
#include "metrics/worker_metrics.h"
#include "proxy_wire_script.h"

#include <arpa/inet.h>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <mutex>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <thread>
#include <unistd.h>

namespace portico::fuzz {
namespace {

// Past what one connection may hold (max_buffered_response_bytes, set to 1 MiB below) on
// both sides, and the blocks a few connections keep to read into: an input that makes the
// worker hold more has found buffers that ignore their budget.
constexpr int64_t kBlockBudget = 2 * (1 << 20) / static_cast<int64_t>(core::kBlockSize) + 64;
constexpr int kMaxPumpPasses = 2000;

std::string config_text(const std::string& socket_path, bool h2c) {
  std::string t = R"([server]
workers = 1
header_timeout = 10
keepalive_timeout = 20
send_timeout = 30
max_buffered_response_bytes = 1048576

[admin]
enabled = false

[log]
level = "error"

[[listener]]
address = "127.0.0.1:1"

[[cluster]]
name = "app"
endpoints = ["unix:)" +
                  socket_path + R"("]
protocol = ")" + (h2c ? "h2c" : "http1") +
                  R"("
response_timeout = 40

[[route]]
path_exact = "/r"
redirect = { scheme = "https", code = 301 }

[[route]]
path_exact = "/d"
direct_response = { status = 200, body = "direct\n" }

[[route]]
path_prefix = "/gz"
cluster = "app"
compress = true
)";
  if (!h2c)
    t += R"(
[[route]]
path_prefix = "/ws"
cluster = "app"
websocket = true
)";
  t += R"(
[[route]]
path_prefix = "/"
cluster = "app"
response_headers_add = { "x-route" = "main" }
)";
  return t;
}

// PORTICO_WIRE_TRACE=1: what each side received, printably, for reading what a seed does.
void trace(const char* who, const char* data, size_t n) {
  static const bool on = std::getenv("PORTICO_WIRE_TRACE") != nullptr;
  if (!on)
    return;
  std::string text;
  for (size_t i = 0; i < n && i < 400; ++i) {
    unsigned char c = static_cast<unsigned char>(data[i]);
    if (c == '\n' || (c >= 0x20 && c < 0x7f)) {
      text += static_cast<char>(c);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      text += hex;
    }
  }
  std::fprintf(stderr, "-- %s %zu bytes:\n%s\n", who, n, text.c_str());
}

int open_descriptors() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d))
      ++n;
    closedir(d);
  }
  return n;
}

} // namespace

void WireHarness::fail(const char* what, long got, long want) {
  std::fprintf(stderr, "proxy_wire: %s (%ld, expected %ld)\n", what, got, want);
  std::abort();
}

WireHarness::WireHarness(bool h2c_upstream) : h2c_(h2c_upstream), loop_(ev_loop_new(EVFLAG_AUTO)) {
  char tmpl[] = "/tmp/portico-wire-XXXXXX";
  if (!mkdtemp(tmpl))
    fail("mkdtemp", errno, 0);
  dir_ = tmpl;
  socket_path_ = dir_ + "/upstream.sock";
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un sun{};
  sun.sun_family = AF_UNIX;
  std::snprintf(sun.sun_path, sizeof sun.sun_path, "%s", socket_path_.c_str());
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&sun), sizeof sun) != 0 ||
      listen(listen_fd_, 64) != 0)
    fail("the upstream socket", errno, 0);

  std::vector<std::string> errors;
  auto cfg = config::parse_config(config_text(socket_path_, h2c_), "proxy_wire.toml", &errors,
                                  filters::route_settings());
  if (!cfg) {
    for (const auto& e : errors)
      std::fprintf(stderr, "%s\n", e.c_str());
    fail("the harness's configuration", 0, 0);
  }
  // Only errors reach stderr: fuzzing makes every warning there is, thousands a second.
  core::log::configure(cfg->log.level, STDERR_FILENO, false);
  bounds_ = core::default_bounds();
  deferred_ = std::make_unique<core::DeferredQueue>(loop_);
  resolver_ = std::make_unique<upstream::DnsResolver>(loop_);
  proxy::GenerationSpec spec;
  spec.id = 1;
  spec.cfg = std::make_shared<const config::Config>(std::move(*cfg));
  spec.metrics = std::make_shared<metrics::WorkerMetrics>(*spec.cfg, &bounds_);
  spec.access_log_fds.assign(spec.cfg->listeners.size(), -1);
  proxy::WorkerServices services{loop_, *deferred_, *resolver_, 0, 1};
  generation_ = std::make_unique<proxy::WorkerGeneration>(services, std::move(spec), nullptr);
  generation_->router().start(loop_);
  ctx_ = std::make_unique<server::ServerContext>(
      loop_, generation_->router(), proxy::limits_for(*generation_->spec().cfg, 1), *deferred_);
}

WireHarness::~WireHarness() {
  ctx_.reset();
  generation_.reset();
  resolver_.reset();
  deferred_.reset();
  ev_loop_destroy(loop_);
  close(listen_fd_);
  unlink(socket_path_.c_str());
  rmdir(dir_.c_str());
}

namespace {

// The harness runs on a thread of its own, as a worker does, with every signal blocked: the
// fake clock is that thread's alone, so libFuzzer's own timing (its -timeout alarm, which a
// signal delivers to whichever thread it interrupts) reads the real one.
class Runner {
public:
  Runner() : thread_([this] { loop(); }) {}
  void run(const uint8_t* data, size_t size) {
    std::unique_lock lock(mu_);
    data_ = data;
    size_ = size;
    pending_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return !pending_; });
  }

private:
  void loop() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    fake_clock::Session fake_time;
    // Made on first use and kept, as a worker keeps its router across connections; never
    // destroyed, so that the leak check at exit has nothing to say of them.
    WireHarness* harness[2] = {nullptr, nullptr};
    for (;;) {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return pending_; });
      Script peek(data_, size_);
      bool h2c = peek.h2c_upstream();
      if (!harness[h2c])
        harness[h2c] = new WireHarness(h2c);
      harness[h2c]->play(data_, size_);
      pending_ = false;
      cv_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool pending_ = false;
  std::thread thread_;
};

} // namespace

void WireHarness::run_one(const uint8_t* data, size_t size) {
  static bool ready = [] {
    std::signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  (void)ready;
  static Runner* runner = new Runner; // never joined: it serves until the process exits
  runner->run(data, size);
}

void WireHarness::open_client() {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
    fail("socketpair", errno, 0);
  client_fd_ = sv[0];
  sockaddr_storage peer{};
  auto* in = reinterpret_cast<sockaddr_in*>(&peer);
  in->sin_family = AF_INET;
  in->sin_port = htons(40000);
  in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ctx_->adopt(sv[1], nullptr, peer, 0);
}

void WireHarness::play(const uint8_t* data, size_t size) {
  const int fds = open_descriptors();
  const int64_t blocks = core::BlockPool::local().in_use();
  peak_blocks_ = blocks;
  client_reading_ = true;
  open_client();
  Script script(data, size);
  script.h2c_upstream();
  Step step;
  while (script.next(step)) {
    switch (step.kind) {
    case StepKind::CLIENT_WRITE:
    case StepKind::CLIENT_WRITE_MORE: client_pending_.append(step.out); break;
    case StepKind::UPSTREAM_WRITE:
      if (Upstream* u = upstream(step.arg))
        u->pending.append(step.out);
      else
        queued_upstream_.append(step.out);
      break;
    case StepKind::CLOCK: fake_clock::advance(step.seconds); break;
    case StepKind::CLIENT_SHUT_WRITE:
      pump(); // what the client wrote goes first
      if (client_fd_ >= 0)
        shutdown(client_fd_, SHUT_WR);
      break;
    case StepKind::UPSTREAM_CLOSE:
      if (Upstream* u = upstream(step.arg)) {
        pump();
        close_upstream(*u);
      }
      break;
    case StepKind::UPSTREAM_SHUT_WRITE:
      if (Upstream* u = upstream(step.arg)) {
        pump();
        shutdown(u->fd, SHUT_WR);
      }
      break;
    case StepKind::CLIENT_READING: client_reading_ = (step.arg & 1) == 0; break;
    }
    pump();
  }
  finish();
  if (ctx_->connection_count() != 0)
    fail("client connections left open", static_cast<long>(ctx_->connection_count()), 0);
  if (generation_->router().in_flight() != 0)
    fail("exchanges left unfinished", generation_->router().in_flight(), 0);
  if (int now = open_descriptors(); now != fds)
    fail("descriptors left open", now, fds);
  if (int64_t now = core::BlockPool::local().in_use(); now != blocks)
    fail("buffer blocks left in use", static_cast<long>(now), static_cast<long>(blocks));
  if (peak_blocks_ - blocks > kBlockBudget)
    fail("buffer blocks past the budget", static_cast<long>(peak_blocks_ - blocks),
         static_cast<long>(kBlockBudget));
}

void WireHarness::finish() {
  // The client reads what is left and goes; the upstreams go; then time passes, in steps,
  // until every timer that could still hold something has fired.
  client_reading_ = true;
  pump();
  close(client_fd_);
  client_fd_ = -1;
  client_pending_.clear();
  queued_upstream_.clear();
  for (int i = 0; i < 12; ++i) {
    for (auto& u : upstreams_)
      close_upstream(*u);
    upstreams_.clear();
    fake_clock::advance(15);
    pump();
  }
  for (auto& u : upstreams_)
    close_upstream(*u);
  upstreams_.clear();
}

void WireHarness::pump() {
  for (int idle = 0, pass = 0; idle < 4 && pass < kMaxPumpPasses; ++pass) {
    ev_run(loop_, EVRUN_NOWAIT);
    int64_t blocks = core::BlockPool::local().in_use();
    if (blocks > peak_blocks_)
      peak_blocks_ = blocks;
    idle = service() ? 0 : idle + 1;
  }
}

bool WireHarness::service() {
  bool moved = accept_upstreams();
  if (client_fd_ >= 0) {
    moved |= flush(client_fd_, client_pending_);
    if (client_reading_)
      moved |= read_client();
  }
  for (auto& u : upstreams_)
    if (u->fd >= 0) {
      moved |= flush(u->fd, u->pending);
      moved |= read_upstream(*u);
    }
  return moved;
}

bool WireHarness::accept_upstreams() {
  bool moved = false;
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      return moved;
    moved = true;
    auto u = std::make_unique<Upstream>();
    u->fd = fd;
    u->pending.swap(queued_upstream_);
    llhttp_settings_init(&u->settings);
    llhttp_init(&u->parser, HTTP_REQUEST, &u->settings);
    upstreams_.push_back(std::move(u));
  }
}

bool WireHarness::flush(int fd, std::string& pending) {
  if (pending.empty())
    return false;
  ssize_t n = send(fd, pending.data(), pending.size(), MSG_NOSIGNAL);
  if (n <= 0) {
    if (n < 0 && errno != EAGAIN)
      pending.clear(); // the proxy closed its end: what it did not read is gone
    return false;
  }
  pending.erase(0, static_cast<size_t>(n));
  return true;
}

bool WireHarness::read_client() {
  char buf[16384];
  bool moved = false;
  for (;;) {
    ssize_t n = read(client_fd_, buf, sizeof buf);
    if (n <= 0)
      return moved;
    moved = true;
    trace("client got", buf, static_cast<size_t>(n));
  }
}

bool WireHarness::read_upstream(Upstream& u) {
  char buf[16384];
  bool moved = false;
  for (;;) {
    ssize_t n = read(u.fd, buf, sizeof buf);
    if (n < 0)
      return moved;
    if (n == 0) { // the proxy closed it
      close_upstream(u);
      return true;
    }
    moved = true;
    trace("upstream got", buf, static_cast<size_t>(n));
    if (!h2c_)
      check_sent_upstream(u, buf, static_cast<size_t>(n));
  }
}

void WireHarness::check_sent_upstream(Upstream& u, const char* data, size_t n) {
  if (u.tunnel)
    return;
  llhttp_errno_t e = llhttp_execute(&u.parser, data, n);
  if (e == HPE_PAUSED_UPGRADE) {
    u.tunnel = true;
    return;
  }
  if (e != HPE_OK) {
    std::fprintf(stderr, "proxy_wire: an upstream read requests that do not parse: %s (%s)\n",
                 llhttp_errno_name(e), llhttp_get_error_reason(&u.parser));
    std::abort();
  }
}

WireHarness::Upstream* WireHarness::upstream(uint8_t arg) {
  size_t open = 0;
  for (auto& u : upstreams_)
    open += u->fd >= 0;
  if (open == 0)
    return nullptr;
  size_t pick = arg % open;
  for (auto& u : upstreams_)
    if (u->fd >= 0 && pick-- == 0)
      return u.get();
  return nullptr;
}

void WireHarness::close_upstream(Upstream& u) {
  if (u.fd >= 0)
    close(u.fd);
  u.fd = -1;
  u.pending.clear();
}

} // namespace portico::fuzz
