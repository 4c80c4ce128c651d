#pragma once
// Shared by the server sessions' tests: a ServerContext on a loop of its own, clients on
// socketpairs (the context adopts one end, the test holds the other), a handler that does what
// each test tells it, a listener that records what it hears, and a reader of HTTP/1 responses.
// Nothing sleeps: run_until() turns the loop until a condition holds or a deadline passes.
#include "loop_until.h"
#include "server/exchange.h"
#include "server/server_context.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <ev.h>
#include <functional>
#include <memory>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace portico::server::test {

using Fields = std::vector<std::pair<std::string, std::string>>;

// Calls the test's function for every request, and remembers each exchange (valid until its
// close: a test answers only those it holds open).
struct FakeHandler : RequestHandler {
  void on_request(Exchange& ex) override {
    exchanges.push_back(&ex);
    targets.emplace_back(ex.request().target);
    if (answer)
      answer(ex);
  }
  std::function<void(Exchange&)> answer;
  std::vector<Exchange*> exchanges;
  std::vector<std::string> targets;
};

// Follows one exchange and records everything it is told.
struct RecordingListener : ExchangeListener {
  void on_request_body(Exchange& ex, std::string_view data) override {
    body.append(data);
    ++body_calls;
  }
  void on_request_trailers(Exchange&, std::span<const http::Header> t) override {
    for (const auto& h : t)
      trailers.emplace_back(h.name, h.value);
  }
  void on_request_end(Exchange& ex) override {
    ++ends;
    if (at_end)
      at_end(ex);
  }
  void on_exchange_close(Exchange&) override { ++closes; }

  std::function<void(Exchange&)> at_end; // answers once the body is in, when set
  std::string body;
  int body_calls = 0;
  Fields trailers;
  int ends = 0;
  int closes = 0;
};

// The test's end of a socketpair. What the server sends is read as the loop runs, into
// received() or, when on_data is set, handed to it.
class TestClient {
public:
  TestClient(struct ev_loop* loop, int fd) : loop_(loop), fd_(fd) {
    ev_io_init(&rev_, read_cb, fd_, EV_READ);
    rev_.data = this;
    ev_io_start(loop_, &rev_);
  }
  ~TestClient() { close(); }
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;

  // Writes all of data (small enough for the socket buffer: the server is not running now).
  void send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::write(fd_, data.data(), data.size());
      ASSERT_GT(n, 0) << "client write: errno " << errno;
      data.remove_prefix(static_cast<size_t>(n));
    }
  }
  // Stops and resumes reading: a client that does not read what the server sends.
  void pause_reading() { ev_io_stop(loop_, &rev_); }
  void resume_reading() {
    if (!eof_ && fd_ >= 0)
      ev_io_start(loop_, &rev_);
  }
  // The client's last request is sent: its write side shuts, it still reads.
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }
  void close() {
    if (fd_ < 0)
      return;
    ev_io_stop(loop_, &rev_);
    ::close(fd_);
    fd_ = -1;
  }
  const std::string& received() const { return received_; }
  bool eof() const { return eof_; }

  std::function<void(std::string_view)> on_data;

private:
  static void read_cb(struct ev_loop*, ev_io* w, int) {
    static_cast<TestClient*>(w->data)->on_readable();
  }
  void on_readable() {
    char buf[65536];
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n > 0) {
      if (on_data)
        on_data({buf, static_cast<size_t>(n)});
      else
        received_.append(buf, static_cast<size_t>(n));
      return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      return;
    eof_ = true; // EOF or a reset: the server is done with this connection
    ev_io_stop(loop_, &rev_);
  }

  struct ev_loop* loop_;
  int fd_;
  ev_io rev_;
  std::string received_;
  bool eof_ = false;
};

// One worker's server side with its own loop.
class ServerHarness {
public:
  explicit ServerHarness(ServerLimits limits = {}) : loop_(ev_loop_new(EVFLAG_AUTO)) {
    std::signal(SIGPIPE, SIG_IGN); // as the servers do: a write to a closed peer is an error
    ctx_ = std::make_unique<ServerContext>(loop_, handler, limits);
  }
  ~ServerHarness() {
    clients_.clear();
    ctx_.reset(); // closes and destroys the connections
    ev_loop_destroy(loop_);
  }
  ServerHarness(const ServerHarness&) = delete;
  ServerHarness& operator=(const ServerHarness&) = delete;

  // A new client connection, adopted by the context. server_sndbuf > 0 shrinks the server
  // side's send buffer, so that responses back up in the connection's output.
  TestClient& connect(int server_sndbuf = 0) {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    if (server_sndbuf > 0)
      ::setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &server_sndbuf, sizeof server_sndbuf);
    sockaddr_storage peer{};
    peer.ss_family = AF_UNIX;
    ctx_->adopt(sv[0], nullptr, peer);
    clients_.push_back(std::make_unique<TestClient>(loop_, sv[1]));
    return *clients_.back();
  }

  // Turns the loop until done() holds; false if `limit` seconds pass first (loop_until.h).
  bool run_until(const std::function<bool()>& done, ev_tstamp limit = 5) {
    return unit::run_loop_until(loop_, done, limit);
  }
  // Turns the loop n times without waiting: whatever is ready to happen, happens.
  void run_ready(int n = 20) {
    for (int i = 0; i < n; ++i)
      ev_run(loop_, EVRUN_NOWAIT);
  }

  struct ev_loop* loop() const {
    return loop_;
  }
  ServerContext& context() { return *ctx_; }

  FakeHandler handler;

private:
  struct ev_loop* loop_;
  std::unique_ptr<ServerContext> ctx_;
  std::vector<std::unique_ptr<TestClient>> clients_;
};

// One HTTP/1 response as the client read it.
struct Response {
  int status = 0;
  Fields headers; // names lower case
  std::string body;
  Fields trailers;

  // The first field of that name, or "" for none.
  std::string header(std::string_view name) const {
    for (const auto& [n, v] : headers)
      if (n == name)
        return v;
    return {};
  }
};

namespace detail {
inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  return out;
}
// Parses "name: value" lines up to the end of `block` into out.
inline void parse_fields(std::string_view block, Fields& out) {
  while (!block.empty()) {
    size_t eol = block.find("\r\n");
    std::string_view line = block.substr(0, eol);
    block = eol == std::string_view::npos ? std::string_view{} : block.substr(eol + 2);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos)
      continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ')
      value.remove_prefix(1);
    out.emplace_back(lower(line.substr(0, colon)), std::string(value));
  }
}
} // namespace detail

// The complete responses at the start of `in`, interim (1xx) ones included, in order; it stops
// at the first one not complete yet. A response with neither length nor chunked framing runs
// to the connection's end: it is complete only once `eof`. (No test here sends HEAD.)
inline std::vector<Response> parse_responses(std::string_view in, bool eof = false) {
  std::vector<Response> out;
  size_t pos = 0;
  while (pos < in.size()) {
    size_t end = in.find("\r\n\r\n", pos);
    if (end == std::string_view::npos)
      break;
    std::string_view head = in.substr(pos, end - pos);
    Response r;
    if (head.size() < 12 || !head.starts_with("HTTP/1."))
      break; // not a response: the test will see fewer than it waits for
    r.status = std::stoi(std::string(head.substr(9, 3)));
    size_t first_eol = head.find("\r\n");
    if (first_eol != std::string_view::npos)
      detail::parse_fields(head.substr(first_eol + 2), r.headers);
    size_t at = end + 4;
    if (r.status < 200 || r.status == 204 || r.status == 304) {
      out.push_back(std::move(r));
      pos = at;
      continue;
    }
    if (std::string cl = r.header("content-length"); !cl.empty()) {
      size_t n = std::stoul(cl);
      if (in.size() < at + n)
        break;
      r.body = std::string(in.substr(at, n));
      pos = at + n;
    } else if (r.header("transfer-encoding") == "chunked") {
      bool complete = false;
      size_t p = at;
      for (;;) {
        size_t eol = in.find("\r\n", p);
        if (eol == std::string_view::npos)
          break;
        size_t size = std::stoul(std::string(in.substr(p, eol - p)), nullptr, 16);
        p = eol + 2;
        if (size == 0) {
          if (in.substr(p, 2) == "\r\n") {
            p += 2; // no trailers
            complete = true;
            break;
          }
          size_t trailers_end = in.find("\r\n\r\n", p);
          if (trailers_end == std::string_view::npos)
            break;
          detail::parse_fields(in.substr(p, trailers_end - p), r.trailers);
          p = trailers_end + 4;
          complete = true;
          break;
        }
        if (in.size() < p + size + 2)
          break;
        r.body.append(in.substr(p, size));
        p += size + 2;
      }
      if (!complete)
        break;
      pos = p;
    } else {
      if (!eof)
        break;
      r.body = std::string(in.substr(at));
      pos = in.size();
    }
    out.push_back(std::move(r));
  }
  return out;
}

} // namespace portico::server::test
