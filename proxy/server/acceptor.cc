#include "server/acceptor.h"

#include "core/error_log.h"
#include "server/accept_share.h"
#include "server/server_context.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>

namespace portico::server {

namespace {
constexpr int kAcceptsPerWakeup = 64;
constexpr ev_tstamp kFirstBackoff = 0.05;
constexpr ev_tstamp kMaxBackoff = 1.0;
constexpr ev_tstamp kMemoryRecheck = 0.1;
// How long a connection waits for a sharer holding fewer: time for a woken process to be
// scheduled on a busy machine (several runnable processes a core), short enough that one which
// never comes costs a client little (it is passed over afterwards).
constexpr ev_tstamp kShareWait = 0.05;
// How often the one that yielded looks again meanwhile: the sharer it waits for may be waiting
// itself, or the counts may have changed so that this one holds the fewest now.
constexpr ev_tstamp kShareRecheck = 0.005;
// Balancing is for connections that stay (a proxy's pool, opened in a burst): one that took this
// many within kShareWindow is under churn (a connection a request), where counts change faster
// than a wait could follow and every wait would cost throughput (wrk with Connection: close:
// 15,900 requests/s without waits, 735 with), so it takes what comes without asking, for
// kShareChurnHold after the last such window.
constexpr int kShareChurn = 16;
constexpr ev_tstamp kShareWindow = 0.1;
constexpr ev_tstamp kShareChurnHold = 1.0;

bool out_of_resources(int err) {
  return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}
} // namespace

void Acceptor::io_cb(struct ev_loop*, ev_io* w, int) {
  static_cast<Acceptor*>(w->data)->on_ready();
}

void Acceptor::backoff_cb(struct ev_loop*, ev_timer* w, int) {
  auto* a = static_cast<Acceptor*>(w->data);
  bool yielded = std::exchange(a->yielded_, false);
  if (!a->started_ || a->at_limit_)
    return;
  ev_io_start(a->ctx_.loop(), &a->io_);
  if (yielded)
    a->on_ready(); // asks the share again
}

Acceptor::Acceptor(ServerContext& ctx, int listen_fd, SSL_CTX* tls, uint16_t listener)
    : ctx_(ctx), lfd_(listen_fd), tls_(tls), listener_(listener) {
  ev_init(&backoff_, backoff_cb);
  backoff_.data = this;
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
  ctx_.add_acceptor(this);
}

Acceptor::~Acceptor() {
  stop();
  if (epfd_ >= 0) {
    ctx_.remove_acceptor(this);
    ::close(epfd_);
  }
}

void Acceptor::start() {
  if (epfd_ < 0)
    return;
  started_ = true;
  at_limit_ = ctx_.may_accept(listener_) == ClientRejection::AT_LIMIT;
  if (!at_limit_)
    ev_io_start(ctx_.loop(), &io_);
}

void Acceptor::stop() {
  started_ = false;
  ev_timer_stop(ctx_.loop(), &backoff_);
  if (epfd_ >= 0)
    ev_io_stop(ctx_.loop(), &io_);
}

void Acceptor::close_fds_after_fork() {
  if (epfd_ >= 0)
    ::close(epfd_);
}

void Acceptor::on_room() {
  if (!at_limit_ || ctx_.may_accept(listener_) != ClientRejection::COUNT)
    return;
  at_limit_ = false;
  if (started_ && !ev_is_active(&backoff_))
    ev_io_start(ctx_.loop(), &io_);
}

void Acceptor::on_ready() {
  epoll_event ev;
  ::epoll_wait(epfd_, &ev, 1, 0); // collect the wakeup; the listen socket is level-triggered
  for (int i = 0; i < kAcceptsPerWakeup; ++i) {
    switch (ClientRejection why = ctx_.may_accept(listener_)) {
    case ClientRejection::AT_LIMIT:
      // The rest wait in the kernel's backlog until a connection here closes (on_room).
      at_limit_ = true;
      ev_io_stop(ctx_.loop(), &io_);
      ctx_.stats().count(why);
      core::log::write(core::log::Level::WARN, core::log::Kind::LIMIT,
                       "listener %u: max_connections reached; new connections wait in the "
                       "listen backlog",
                       static_cast<unsigned>(listener_));
      return;
    case ClientRejection::MEMORY:
      // Buffers drain without a connection closing: look again shortly.
      pause_for(kMemoryRecheck);
      ctx_.stats().count(why);
      core::log::write(core::log::Level::WARN, core::log::Kind::LIMIT,
                       "listener %u: max_buffer_memory reached; accepting paused",
                       static_cast<unsigned>(listener_));
      return;
    default: break;
    }
    if (!may_take())
      return;
    sockaddr_storage peer;
    socklen_t len = sizeof peer;
    int fd =
        ::accept4(lfd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      delay_ = 0;
      ++window_accepts_;
      ctx_.adopt(fd, tls_, peer,
                 listener_); // the peer's address from accept4: no getpeername per client
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED)
      continue;
    if (errno == EINVAL) { // the socket no longer listens (a graceful stop shut it): no spin
      stop();
      return;
    }
    if (out_of_resources(errno))
      back_off(errno);
    // EAGAIN: another worker took it.
    break;
  }
}

bool Acceptor::may_take() {
  AcceptShare* share = ctx_.accept_share();
  if (!share)
    return true;
  ev_tstamp now = ev_now(ctx_.loop());
  if (now - window_start_ >= kShareWindow) {
    window_start_ = now;
    window_accepts_ = 0;
  }
  if (window_accepts_ >= kShareChurn)
    churn_until_ = now + kShareChurnHold;
  if (now < churn_until_)
    return true;
  for (;;) {
    int other = share->fewer_than(ctx_.connection_count());
    // Yield only a connection that is there: waiting with none queued would hold up the next
    // one, and count against the sharer waited for.
    if (other < 0 || !connection_queued()) {
      waited_for_ = -1;
      return other < 0;
    }
    if (other != waited_for_ || share->accepted_by(other) != accepted_seen_) {
      waited_for_ = other; // a new wait: for this one, from now
      accepted_seen_ = share->accepted_by(other);
      waiting_since_ = now;
    } else if (now - waiting_since_ >= kShareWait) {
      share->pass_over(other); // it took none in all that time: ask for the next
      waited_for_ = -1;
      continue;
    }
    pause_for(kShareRecheck);
    yielded_ = true;
    return false;
  }
}

bool Acceptor::connection_queued() const {
  pollfd p{lfd_, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

void Acceptor::pause_for(ev_tstamp seconds) {
  yielded_ = false;
  ev_io_stop(ctx_.loop(), &io_);
  ev_timer_set(&backoff_, seconds, 0);
  ev_timer_start(ctx_.loop(), &backoff_);
}

void Acceptor::back_off(int err) {
  ctx_.stats().count(ClientRejection::OUT_OF_RESOURCES);
  delay_ = delay_ == 0 ? kFirstBackoff : std::min(delay_ * 2, kMaxBackoff);
  pause_for(delay_);
  core::log::write(core::log::Level::ERROR, core::log::Kind::LIMIT,
                   "accept on listener %u: %s; accepting again in %.2f s",
                   static_cast<unsigned>(listener_), std::strerror(err), delay_);
}

} // namespace portico::server
