#include "server/acceptor.h"

#include "server/server_context.h"

#include <cerrno>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::server {

namespace {
constexpr int kAcceptsPerWakeup = 64;
}

void Acceptor::io_cb(struct ev_loop*, ev_io* w, int) {
  static_cast<Acceptor*>(w->data)->on_ready();
}

Acceptor::Acceptor(ServerContext& ctx, int listen_fd, SSL_CTX* tls, uint16_t listener)
    : ctx_(ctx), lfd_(listen_fd), tls_(tls), listener_(listener) {
  epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0)
    return;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLEXCLUSIVE;
  if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, lfd_, &ev) != 0) {
    ::close(epfd_);
    epfd_ = -1;
    return;
  }
  ev_io_init(&io_, io_cb, epfd_, EV_READ);
  io_.data = this;
}

Acceptor::~Acceptor() {
  stop();
  if (epfd_ >= 0)
    ::close(epfd_);
}

void Acceptor::start() {
  if (epfd_ >= 0)
    ev_io_start(ctx_.loop(), &io_);
}

void Acceptor::stop() {
  if (epfd_ >= 0)
    ev_io_stop(ctx_.loop(), &io_);
}

void Acceptor::on_ready() {
  epoll_event ev;
  ::epoll_wait(epfd_, &ev, 1, 0); // collect the wakeup; the listen socket is level-triggered
  for (int i = 0; i < kAcceptsPerWakeup; ++i) {
    sockaddr_storage peer;
    socklen_t len = sizeof peer;
    int fd =
        ::accept4(lfd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      ctx_.adopt(fd, tls_, peer,
                 listener_); // the peer's address from accept4: no getpeername per client
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED)
      continue;
    // EAGAIN: another worker took it. EMFILE and friends: try again on the next wakeup.
    break;
  }
}

} // namespace portico::server
