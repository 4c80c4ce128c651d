#include "admin_server.h"

#include "core/listen_address.h"
#include "http/response_head.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::backend {

namespace {

bool is_tchar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// The end of a request head: the blank line (CRLF CRLF, or a bare LF LF as RFC 9112 2.2
// tolerates), or npos.
size_t head_end(std::string_view s) {
  size_t crlf = s.find("\r\n\r\n");
  size_t lf = s.find("\n\n");
  return std::min(crlf == std::string_view::npos ? crlf : crlf + 4,
                  lf == std::string_view::npos ? lf : lf + 2);
}

std::string format_response(int status, const AdminResponse& r, bool head_only) {
  std::string out;
  out.reserve(128 + (head_only ? 0 : r.body.size()));
  out += "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out += http::reason_phrase(status);
  out += "\r\nContent-Type: ";
  out += r.content_type;
  out += "\r\nContent-Length: ";
  out += std::to_string(r.body.size());
  if (status == 405)
    out += "\r\nAllow: GET, HEAD";
  out += "\r\nConnection: close\r\n\r\n";
  if (!head_only)
    out += r.body;
  return out;
}

} // namespace

int parse_admin_request(std::string_view head, AdminRequest* out) {
  std::string_view line = head.substr(0, head.find('\n'));
  if (line.ends_with('\r'))
    line.remove_suffix(1);
  size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0)
    return 400;
  size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return 400;
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!std::all_of(method.begin(), method.end(), is_tchar))
    return 400;
  if (!version.starts_with("HTTP/") || version.size() != 8 || version[6] != '.')
    return 400;
  if (version[5] != '1')
    return 505;
  if (target.empty() || target[0] != '/')
    return 400; // origin-form only: nothing here needs another
  for (char c : target)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      return 400;
  out->method = method;
  out->path = target.substr(0, target.find_first_of("?#"));
  return 0;
}

AdminServer::~AdminServer() {
  for (auto& c : clients_)
    drop(c);
  if (listen_fd_ >= 0)
    ::close(listen_fd_);
  if (!unix_path_.empty())
    ::unlink(unix_path_.c_str());
}

bool AdminServer::listen(const std::string& address, std::string* error) {
  auto a = core::parse_listen_address(address, error);
  if (!a)
    return false;
  listen_fd_ = core::open_listener(*a, 64, false, error);
  if (listen_fd_ < 0)
    return false;
  if (a->kind == core::ListenAddress::Kind::UNIX)
    unix_path_ = a->path;
  return true;
}

void AdminServer::close_fds() {
  for (auto& c : clients_)
    if (c.fd >= 0)
      ::close(c.fd);
  clients_.clear();
  if (listen_fd_ >= 0)
    ::close(listen_fd_);
  listen_fd_ = -1;
  unix_path_.clear(); // the master's to remove, not ours
}

void AdminServer::add_pollfds(std::vector<pollfd>& fds) {
  fds.push_back({listen_fd_, POLLIN, 0});
  for (const auto& c : clients_)
    fds.push_back({c.fd, static_cast<short>(c.state == State::WRITING ? POLLOUT : POLLIN), 0});
  polled_ = clients_.size();
}

int AdminServer::timeout_ms(double now) const {
  if (clients_.empty())
    return -1;
  double first = clients_.front().deadline;
  for (const auto& c : clients_)
    first = std::min(first, c.deadline);
  return std::max(0, static_cast<int>(std::ceil((first - now) * 1000)));
}

void AdminServer::on_poll(const pollfd* fds, double now) {
  for (size_t i = 0; i < polled_ && i < clients_.size(); ++i) {
    Client& c = clients_[i];
    short ev = fds[1 + i].revents;
    if (ev & POLLNVAL) {
      drop(c);
      continue;
    }
    if (c.state == State::WRITING && (ev & (POLLOUT | POLLERR | POLLHUP)))
      write_out(c, now);
    else if (c.state != State::WRITING && (ev & (POLLIN | POLLERR | POLLHUP)))
      on_readable(c, now);
  }
  for (auto& c : clients_)
    if (c.fd >= 0 && now >= c.deadline)
      drop(c); // too slow to send its head or to take its answer, or done lingering
  std::erase_if(clients_, [](const Client& c) { return c.fd < 0; });
  polled_ = 0;
  if (fds[0].revents & POLLIN)
    accept_clients(now);
}

void AdminServer::accept_clients(double now) {
  for (int i = 0; i < kAcceptsPerWakeup; ++i) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      return; // EAGAIN, or an error a later wakeup may not have
    if (clients_.size() >= kMaxClients) {
      ::close(fd); // busy: refused rather than left to fill the backlog
      continue;
    }
    Client c;
    c.fd = fd;
    c.deadline = now + kTimeout;
    clients_.push_back(std::move(c));
  }
}

void AdminServer::on_readable(Client& c, double now) {
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(c.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    if (n <= 0) {
      drop(c); // EOF or error: before the head there is no one to answer, after it no more
      return;
    }
    if (c.state == State::LINGERING) {
      c.discarded += static_cast<size_t>(n);
      if (c.discarded > kMaxDiscard) {
        drop(c);
        return;
      }
      continue;
    }
    size_t take = std::min(static_cast<size_t>(n), kMaxHead - c.buf.size());
    c.buf.append(buf, take);
    if (head_end(c.buf) != std::string::npos || c.buf.size() >= kMaxHead) {
      answer(c, now);
      return;
    }
  }
}

void AdminServer::answer(Client& c, double now) {
  AdminResponse r;
  AdminRequest req;
  int status = head_end(c.buf) == std::string::npos ? 431 : parse_admin_request(c.buf, &req);
  bool head_only = false;
  if (status == 0 && req.method != "GET" && req.method != "HEAD") {
    status = 405;
    r.body = "GET or HEAD\n";
  } else if (status == 0) {
    head_only = req.method == "HEAD";
    r = handler_(req.path);
    status = r.status;
  } else {
    r.body = std::string(http::reason_phrase(status)) + "\n";
  }
  c.buf = format_response(status, r, head_only);
  c.sent = 0;
  c.state = State::WRITING;
  write_out(c, now);
}

void AdminServer::write_out(Client& c, double now) {
  while (c.sent < c.buf.size()) {
    ssize_t n = ::send(c.fd, c.buf.data() + c.sent, c.buf.size() - c.sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return; // POLLOUT next time
    if (n < 0) {
      drop(c);
      return;
    }
    c.sent += static_cast<size_t>(n);
  }
  std::string().swap(c.buf);
  ::shutdown(c.fd, SHUT_WR);
  c.state = State::LINGERING;
  c.deadline = now + kLinger;
}

void AdminServer::drop(Client& c) {
  if (c.fd >= 0)
    ::close(c.fd);
  c.fd = -1;
}

} // namespace portico::backend
