// portico-h3load: an HTTP/3 load client (h2load in Debian 12 is built without HTTP/3) and,
// with --raw-*, a frame-level client for the tests: it writes the given bytes on streams of
// its own and prints what the server answered, stream by stream, and how the connection ended.
#include "clock.h"
#include "quic_client.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

const char* kUsage = R"(usage: portico-h3load [options] HOST:PORT

Load (HTTP/3, h2load's figures):
  -n N              requests in all (default 1)
  -c N              connections (default 1)
  -m N              requests in flight per connection (default 1)
  -D SECONDS        run for this long instead of a number of requests
  --path PATH       (default /)
  --method METHOD   (default GET)
  --body BYTES      a request body of this many bytes
  --authority NAME  (default HOST:PORT)
  --sni NAME        (default localhost)
  --timeout SECONDS handshake timeout, and how long past the load it may run (default 10)

Frame level (one connection; writes after the handshake, prints what came back):
  --raw-bidi HEX       a bidirectional stream carrying these bytes, then FIN (repeatable)
  --raw-bidi-open HEX  the same without FIN
  --raw-uni HEX        a unidirectional stream carrying these bytes, left open
  --raw-uni-fin HEX    the same, then FIN
  --migrate            once the streams before it are answered, move to a new local port
                       (connection migration); the streams after it go from there
  --params             print the server's transport parameters and end
  --await-close        wait for the server to close the connection, not for the streams
  --hold               print "ready" after the handshake and hold the connection until
                       standard input closes
  --first-flight       send the first flight only, answer nothing, and count the bytes
                       that come back within --timeout seconds
)";

bool parse_hex(const std::string& text, std::string* out) {
  if (text.size() % 2 != 0)
    return false;
  for (size_t i = 0; i < text.size(); i += 2) {
    char* end = nullptr;
    std::string byte = text.substr(i, 2);
    long v = std::strtol(byte.c_str(), &end, 16);
    if (*end != '\0')
      return false;
    out->push_back(static_cast<char>(v));
  }
  return true;
}

std::string to_hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

bool resolve(const std::string& hostport, h3load::Target* t) {
  size_t colon = hostport.rfind(':');
  if (colon == std::string::npos)
    return false;
  std::string host = hostport.substr(0, colon);
  std::string port = hostport.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || !res)
    return false;
  std::memcpy(&t->addr, res->ai_addr, res->ai_addrlen);
  t->addr_len = res->ai_addrlen;
  ::freeaddrinfo(res);
  if (t->authority.empty())
    t->authority = hostport;
  return true;
}

struct Options {
  long requests = 1;
  long connections = 1;
  long concurrency = 1;
  double duration = 0;
  double timeout = 10;
  h3load::RequestSpec request;
  std::vector<h3load::RawStream> raw;
  bool await_close = false;
  bool hold = false;
  bool params = false;
  bool first_flight = false;
};

// ---- load ----

class Load : public h3load::ClientEvents {
public:
  Load(struct ev_loop* loop, const Options& o) : loop_(loop), o_(o) {}

  int run(const h3load::Target& target) {
    started_ = h3load::now_s();
    for (long i = 0; i < o_.connections; ++i) {
      auto c = std::make_unique<h3load::QuicClient>(loop_, target, *this, false);
      c->set_concurrency(static_cast<size_t>(o_.concurrency));
      c->set_request(o_.request);
      c->want_request = [this] { return take_request(); };
      clients_.push_back(std::move(c));
    }
    for (auto& c : clients_) {
      std::string error;
      if (!c->start(&error)) {
        std::fprintf(stderr, "connection: %s\n", error.c_str());
        c->close();
      }
    }
    ev_timer_init(&limit_, limit_cb, o_.duration > 0 ? o_.duration : 0, 0);
    limit_.data = this;
    if (o_.duration > 0)
      ev_timer_start(loop_, &limit_);
    ev_timer_init(&stall_, stall_cb, 0, o_.timeout);
    stall_.data = this;
    ev_timer_again(loop_, &stall_);
    ev_run(loop_, 0);
    report();
    return stalled_ ? 1 : 0;
  }

  void ready(h3load::QuicClient&) override { ++handshakes_; }

  void response(h3load::QuicClient&, int status, uint64_t bytes, uint64_t reset_code,
                double seconds) override {
    ++done_;
    bytes_ += bytes;
    if (reset_code != 0 || status == 0)
      ++errored_;
    else if (status >= 200 && status < 300)
      ++succeeded_;
    if (status >= 200 && status < 600)
      ++status_[status / 100 - 2];
    latencies_.push_back(seconds);
    ev_timer_again(loop_, &stall_);
    maybe_end();
  }

  void closed(h3load::QuicClient& c) override {
    if (c.close_reason() != "closed") {
      ++failed_connections_;
      if (first_failure_.empty())
        first_failure_ = c.close_reason();
    }
    maybe_end();
  }

private:
  bool take_request() {
    if (stopping_)
      return false;
    if (o_.duration <= 0 && issued_ >= o_.requests)
      return false;
    ++issued_;
    return true;
  }

  void maybe_end() {
    bool all_closed =
        std::all_of(clients_.begin(), clients_.end(), [](const auto& c) { return c->is_closed(); });
    bool load_done = (o_.duration <= 0 && done_ >= o_.requests) || (stopping_ && done_ >= issued_);
    if (all_closed || load_done)
      end();
  }

  void end() {
    if (ended_)
      return;
    ended_ = true;
    finished_ = h3load::now_s();
    ev_timer_stop(loop_, &limit_);
    ev_timer_stop(loop_, &stall_);
    for (auto& c : clients_)
      c->close();
    ev_break(loop_, EVBREAK_ALL);
  }

  static void limit_cb(struct ev_loop*, ev_timer* w, int) {
    Load* l = static_cast<Load*>(w->data);
    if (!l->stopping_) {
      // Time is up: no new request; those in flight get o_.timeout more seconds.
      l->stopping_ = true;
      l->finished_ = h3load::now_s();
      l->maybe_end();
      if (!l->ended_) {
        w->repeat = l->o_.timeout;
        ev_timer_again(l->loop_, w);
      }
      return;
    }
    l->end();
  }

  // No response for --timeout seconds: the run ends, and says so.
  static void stall_cb(struct ev_loop*, ev_timer* w, int) {
    Load* l = static_cast<Load*>(w->data);
    l->stalled_ = true;
    l->end();
  }

  double percentile(double p) {
    if (latencies_.empty())
      return 0;
    size_t i = std::min(latencies_.size() - 1, static_cast<size_t>(p * latencies_.size()));
    std::nth_element(latencies_.begin(), latencies_.begin() + i, latencies_.end());
    return latencies_[i];
  }

  void report() {
    double elapsed = (stopping_ && o_.duration > 0 ? o_.duration : finished_ - started_);
    if (elapsed <= 0)
      elapsed = 1e-9;
    std::printf("finished in %.3fs, %.2f req/s, %.2fMB/s\n", elapsed,
                static_cast<double>(succeeded_) / elapsed,
                static_cast<double>(bytes_) / elapsed / 1e6);
    std::printf("requests: %ld total, %ld started, %ld done, %ld succeeded, %ld failed, "
                "%ld errored\n",
                o_.duration > 0 ? issued_ : o_.requests, issued_, done_, succeeded_,
                done_ - succeeded_, errored_);
    std::printf("status codes: %ld 2xx, %ld 3xx, %ld 4xx, %ld 5xx\n", status_[0], status_[1],
                status_[2], status_[3]);
    std::printf("traffic: %llu bytes of response bodies\n",
                static_cast<unsigned long long>(bytes_));
    double p50 = percentile(0.5), p99 = percentile(0.99);
    double max = latencies_.empty() ? 0 : *std::max_element(latencies_.begin(), latencies_.end());
    std::printf("latency: p50 %.3f ms, p99 %.3f ms, max %.3f ms\n", p50 * 1e3, p99 * 1e3,
                max * 1e3);
    if (stalled_)
      std::printf("stalled: no response for %.1f s\n", o_.timeout);
    std::printf("connections: %ld handshakes, %ld failed%s%s\n", handshakes_, failed_connections_,
                first_failure_.empty() ? "" : ", the first: ", first_failure_.c_str());
  }

  struct ev_loop* loop_;
  const Options& o_;
  std::vector<std::unique_ptr<h3load::QuicClient>> clients_;
  ev_timer limit_;
  ev_timer stall_;
  bool stalled_ = false;
  double started_ = 0;
  double finished_ = 0;
  bool stopping_ = false;
  bool ended_ = false;
  long issued_ = 0;
  long done_ = 0;
  long succeeded_ = 0;
  long errored_ = 0;
  long status_[4] = {};
  long handshakes_ = 0;
  long failed_connections_ = 0;
  std::string first_failure_;
  uint64_t bytes_ = 0;
  std::vector<double> latencies_;
};

// ---- frame level ----

class Raw : public h3load::ClientEvents {
public:
  Raw(struct ev_loop* loop, const Options& o) : loop_(loop), o_(o) {}

  int run(const h3load::Target& target) {
    client_ = std::make_unique<h3load::QuicClient>(loop_, target, *this, true);
    if (o_.first_flight)
      client_->set_silent_after_first_flight();
    client_->raw_send(o_.raw);
    ev_timer_init(&limit_, limit_cb, o_.timeout, 0);
    limit_.data = this;
    ev_timer_start(loop_, &limit_);
    ev_io_init(&stdin_, stdin_cb, 0, EV_READ);
    stdin_.data = this;
    std::string error;
    if (!client_->start(&error)) {
      std::printf("error %s\n", error.c_str());
      return 1;
    }
    ev_run(loop_, 0);
    return print();
  }

  void ready(h3load::QuicClient& c) override {
    const ngtcp2_transport_params* p = c.remote_params();
    std::printf("handshake ok\n");
    if (p)
      std::printf("params max_streams_bidi %llu initial_max_data %llu "
                  "initial_max_stream_data_bidi_remote %llu max_idle_timeout_ms %llu\n",
                  static_cast<unsigned long long>(p->initial_max_streams_bidi),
                  static_cast<unsigned long long>(p->initial_max_data),
                  static_cast<unsigned long long>(p->initial_max_stream_data_bidi_remote),
                  static_cast<unsigned long long>(p->max_idle_timeout / NGTCP2_MILLISECONDS));
    if (o_.hold) {
      std::printf("ready\n");
      ev_timer_stop(loop_, &limit_);
      ev_io_start(loop_, &stdin_);
    }
    std::fflush(stdout);
    ev_prepare_init(&check_, check_cb);
    check_.data = this;
    ev_prepare_start(loop_, &check_);
  }

  void closed(h3load::QuicClient&) override { ev_break(loop_, EVBREAK_ALL); }

private:
  static void limit_cb(struct ev_loop* loop, ev_timer* w, int) {
    Raw* r = static_cast<Raw*>(w->data);
    r->timed_out_ = !r->client_->is_closed() && !r->o_.first_flight;
    ev_break(loop, EVBREAK_ALL);
  }

  static void stdin_cb(struct ev_loop* loop, ev_io* w, int) {
    char buf[256];
    if (::read(0, buf, sizeof buf) <= 0)
      ev_break(loop, EVBREAK_ALL);
  }

  // After each loop pass: done once every stream this client opened is answered (unless the
  // test waits for the connection's end).
  static void check_cb(struct ev_loop* loop, ev_prepare* w, int) {
    Raw* r = static_cast<Raw*>(w->data);
    if (!r->o_.await_close && !r->o_.hold && r->client_->raw_streams_finished())
      ev_break(loop, EVBREAK_ALL);
  }

  int print() {
    for (const auto& [id, s] : client_->raw_results()) {
      std::printf("stream %lld", static_cast<long long>(id));
      if (s.reset)
        std::printf(" reset 0x%llx", static_cast<unsigned long long>(s.reset_code));
      else if (s.fin)
        std::printf(" fin");
      else
        std::printf(" open");
      if (s.stop_sending)
        std::printf(" stop_sending 0x%llx", static_cast<unsigned long long>(s.stop_code));
      std::printf(" data %s\n", to_hex(s.data).c_str());
    }
    std::printf("local port %u migrations %d\n", static_cast<unsigned>(client_->local_port()),
                client_->migrations());
    if (o_.first_flight)
      std::printf("first flight sent %llu received %llu\n",
                  static_cast<unsigned long long>(client_->bytes_sent()),
                  static_cast<unsigned long long>(client_->bytes_received()));
    else if (client_->is_closed())
      std::printf("close %s\n", client_->close_reason().c_str());
    else if (timed_out_)
      std::printf("timeout\n");
    else
      std::printf("open\n");
    client_->close();
    return 0;
  }

  struct ev_loop* loop_;
  const Options& o_;
  std::unique_ptr<h3load::QuicClient> client_;
  ev_timer limit_;
  ev_io stdin_;
  ev_prepare check_;
  bool timed_out_ = false;
};

bool take_value(int argc, char** argv, int* i, std::string* value) {
  if (*i + 1 >= argc)
    return false;
  *value = argv[++*i];
  return true;
}

} // namespace

int main(int argc, char** argv) {
  Options o;
  h3load::Target target;
  std::string hostport;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string v;
    auto number = [&](double* out) {
      if (!take_value(argc, argv, &i, &v))
        return false;
      char* end = nullptr;
      *out = std::strtod(v.c_str(), &end);
      return *end == '\0' && *out >= 0;
    };
    double d = 0;
    bool ok = true;
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "-n" && (ok = number(&d))) {
      o.requests = static_cast<long>(d);
    } else if (a == "-c" && (ok = number(&d))) {
      o.connections = std::max(1L, static_cast<long>(d));
    } else if (a == "-m" && (ok = number(&d))) {
      o.concurrency = std::max(1L, static_cast<long>(d));
    } else if (a == "-D" && (ok = number(&d))) {
      o.duration = d;
    } else if (a == "--timeout" && (ok = number(&d))) {
      o.timeout = d;
    } else if (a == "--body" && (ok = number(&d))) {
      o.request.body = static_cast<size_t>(d);
    } else if (a == "--path" && (ok = take_value(argc, argv, &i, &v))) {
      o.request.path = v;
    } else if (a == "--method" && (ok = take_value(argc, argv, &i, &v))) {
      o.request.method = v;
    } else if (a == "--authority" && (ok = take_value(argc, argv, &i, &v))) {
      target.authority = v;
    } else if (a == "--sni" && (ok = take_value(argc, argv, &i, &v))) {
      target.sni = v;
    } else if ((a == "--raw-bidi" || a == "--raw-bidi-open" || a == "--raw-uni" ||
                a == "--raw-uni-fin") &&
               (ok = take_value(argc, argv, &i, &v))) {
      h3load::RawStream r;
      r.bidi = a == "--raw-bidi" || a == "--raw-bidi-open";
      r.fin = a == "--raw-bidi" || a == "--raw-uni-fin";
      ok = parse_hex(v, &r.bytes);
      o.raw.push_back(std::move(r));
    } else if (a == "--await-close") {
      o.await_close = true;
    } else if (a == "--migrate") {
      h3load::RawStream r;
      r.migrate = true;
      o.raw.push_back(std::move(r));
    } else if (a == "--params") {
      o.params = true;
    } else if (a == "--hold") {
      o.hold = true;
    } else if (a == "--first-flight") {
      o.first_flight = true;
    } else if (a[0] != '-' && hostport.empty()) {
      hostport = a;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "portico-h3load: bad option %s\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  if (hostport.empty() || !resolve(hostport, &target)) {
    std::fprintf(stderr, "portico-h3load: give HOST:PORT (%s)\n", hostport.c_str());
    return 2;
  }
  target.handshake_timeout = o.timeout;
  struct ev_loop* loop = EV_DEFAULT;
  if (!o.raw.empty() || o.params || o.hold || o.first_flight || o.await_close)
    return Raw(loop, o).run(target);
  return Load(loop, o).run(target);
}
