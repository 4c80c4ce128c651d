#include "memcached_client.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

namespace portico::backend {

namespace {
constexpr double kReplyTimeout = 1.0; // as libmemcached's poll timeout was
constexpr double kRetryAfter = 1.0;   // a failed memcached is passed over this long
} // namespace

MemcachedClient::MemcachedClient(struct ev_loop* loop, const std::string& address)
    : loop_(loop), address_(address) {
  std::string host = address, port = "11211";
  if (auto colon = address.rfind(':'); colon != std::string::npos) {
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
  }
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  // At worker start, before the loop runs: the one lookup a worker makes.
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0 || !res) {
    resolve_error_ = "memcached " + address + ": " + ::gai_strerror(rc);
  } else {
    std::memcpy(&addr_, res->ai_addr, res->ai_addrlen);
    addr_len_ = res->ai_addrlen;
    ::freeaddrinfo(res);
  }
  ev_init(&io_, io_cb);
  io_.data = this;
  ev_init(&timer_, timer_cb);
  timer_.data = this;
}

MemcachedClient::~MemcachedClient() {
  ev_io_stop(loop_, &io_);
  ev_timer_stop(loop_, &timer_);
  if (fd_ >= 0)
    ::close(fd_);
}

bool MemcachedClient::connect() {
  if (!resolve_error_.empty() || ev_now(loop_) < retry_at_)
    return false;
  fd_ = ::socket(addr_.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0)
    return false;
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr_), addr_len_) != 0 && errno != EINPROGRESS) {
    ::close(fd_);
    fd_ = -1;
    retry_at_ = ev_now(loop_) + kRetryAfter;
    return false;
  }
  connected_ = false;
  ev_io_set(&io_, fd_, EV_READ | EV_WRITE); // writable: the connect finished
  ev_io_start(loop_, &io_);
  return true;
}

void MemcachedClient::increment(std::string_view key, CounterWaiter* waiter) {
  if (fd_ < 0 && !connect()) {
    waiter->on_counter(core::unexpected(
        !resolve_error_.empty() ? resolve_error_
                                : "memcached " + address_ + " unavailable (tried again shortly)"));
    return;
  }
  std::string k = "counter:";
  k.append(key);
  send(Step::INCR, k, waiter);
}

void MemcachedClient::send(Step step, const std::string& key, CounterWaiter* waiter) {
  if (step == Step::ADD) {
    out_.append("add ");
    out_.append(key);
    out_.append(" 0 0 1\r\n1\r\n");
  } else {
    out_.append("incr ");
    out_.append(key);
    out_.append(" 1\r\n");
  }
  if (sent_.empty())
    last_progress_ = ev_now(loop_);
  sent_.push_back({step, key, waiter});
  arm_timer();
  if (connected_)
    flush();
}

void MemcachedClient::cancel(CounterWaiter* waiter) {
  for (Sent& s : sent_)
    if (s.waiter == waiter)
      s.waiter = nullptr; // its answer is read and dropped, keeping the order
}

void MemcachedClient::io_cb(struct ev_loop*, ev_io* w, int revents) {
  static_cast<MemcachedClient*>(w->data)->on_io(revents);
}

void MemcachedClient::timer_cb(struct ev_loop*, ev_timer* w, int) {
  auto* self = static_cast<MemcachedClient*>(w->data);
  if (self->sent_.empty())
    return;
  if (ev_now(self->loop_) - self->last_progress_ >= kReplyTimeout - 0.001) {
    self->fail_all("memcached " + self->address_ + " did not answer within 1 s");
    return;
  }
  self->arm_timer();
}

void MemcachedClient::arm_timer() {
  if (sent_.empty()) {
    ev_timer_stop(loop_, &timer_);
    return;
  }
  ev_timer_set(&timer_, std::max(0.001, last_progress_ + kReplyTimeout - ev_now(loop_)), 0);
  ev_timer_start(loop_, &timer_);
}

void MemcachedClient::on_io(int revents) {
  if (!connected_ && (revents & EV_WRITE)) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      fail_all("memcached " + address_ + ": " + std::strerror(err));
      return;
    }
    connected_ = true;
  }
  if (revents & EV_WRITE)
    flush();
  if (!(revents & EV_READ) || fd_ < 0)
    return;
  char buf[16384];
  ssize_t n = ::read(fd_, buf, sizeof buf);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    fail_all("memcached " + address_ + ": " +
             (n == 0 ? "connection closed" : std::strerror(errno)));
    return;
  }
  if (n < 0)
    return;
  in_.append(buf, static_cast<size_t>(n));
  size_t at = 0;
  for (size_t eol; fd_ >= 0 && (eol = in_.find("\r\n", at)) != std::string::npos; at = eol + 2)
    on_line(std::string_view(in_).substr(at, eol - at));
  if (fd_ >= 0)
    in_.erase(0, at);
}

void MemcachedClient::flush() {
  if (!out_.empty()) {
    ssize_t w = out_.write_to(fd_);
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      fail_all("memcached " + address_ + ": " + std::strerror(errno));
      return;
    }
  }
  ev_io_stop(loop_, &io_);
  ev_io_set(&io_, fd_, out_.empty() ? EV_READ : EV_READ | EV_WRITE);
  ev_io_start(loop_, &io_);
}

void MemcachedClient::on_line(std::string_view line) {
  if (sent_.empty()) {
    fail_all("memcached " + address_ + ": unexpected reply");
    return;
  }
  Sent s = std::move(sent_.front());
  sent_.pop_front();
  last_progress_ = ev_now(loop_);
  arm_timer();
  auto answer = [&](core::expected<uint64_t, std::string> v) {
    if (s.waiter)
      s.waiter->on_counter(std::move(v));
  };
  if (s.step != Step::ADD) {
    uint64_t value = 0;
    auto r = std::from_chars(line.data(), line.data() + line.size(), value);
    if (r.ec == std::errc() && r.ptr == line.data() + line.size()) {
      answer(value);
    } else if (line == "NOT_FOUND" && s.step == Step::INCR) {
      send(Step::ADD, s.key, s.waiter);
    } else {
      answer(core::unexpected(line == "NOT_FOUND" ? std::string("counter contended")
                                                  : "memcached: " + std::string(line)));
    }
    return;
  }
  if (line == "STORED")
    answer(uint64_t{1});
  else if (line == "NOT_STORED")
    send(Step::INCR_AGAIN, s.key, s.waiter); // another worker added it first
  else
    answer(core::unexpected("memcached: " + std::string(line)));
}

void MemcachedClient::fail_all(const std::string& why) {
  ev_io_stop(loop_, &io_);
  ev_timer_stop(loop_, &timer_);
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
  connected_ = false;
  out_.clear();
  in_.clear();
  retry_at_ = ev_now(loop_) + kRetryAfter;
  std::deque<Sent> failed;
  failed.swap(sent_);
  for (Sent& s : failed)
    if (s.waiter)
      s.waiter->on_counter(core::unexpected(why));
}

} // namespace portico::backend
