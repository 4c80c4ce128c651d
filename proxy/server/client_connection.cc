#include "server/client_connection.h"

#include "server/http1_server_session.h"
#include "server/http2_server_session.h"
#include "server/server_context.h"
#include "tls/tls_session.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::server {

namespace {
constexpr std::string_view kH2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr std::string_view kH2RequestLine = "PRI * HTTP/2.0\r\n";
constexpr ev_tstamp kSlack = 0.001; // a timer may fire this much early and still count
} // namespace

ClientConnection::ClientConnection(ServerContext& ctx, int fd, SSL_CTX* tls,
                                   const sockaddr_storage& ss, uint16_t listener)
    : SocketConnection(ctx.loop(), fd), ctx_(ctx), listener_(listener),
      idle_timeout_(ctx.limits().keepalive_timeout) {
  if (tls)
    tls_ = std::make_unique<tls::TlsSession>(tls, fd);
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); // fails harmlessly on unix
  peer_ss_ = ss;
  set_peer_text(ss);
  stage_ = ctx.limits().proxy_protocol(listener) ? Stage::PROXY_HEADER
           : tls_                                ? Stage::TLS_HANDSHAKE
                                                 : Stage::PROTOCOL;
  timer_.repeat = check_interval();
  ev_timer_again(loop(), &timer_);
  last_activity_ = ev_now(loop());
  ev_io_start(loop(), &rev_);
}

ClientConnection::~ClientConnection() {
  if (close_state_ != CloseState::CLOSED)
    close_now();
  session_.reset();
  if (in_)
    core::BlockPool::local().put(in_);
}

ev_tstamp ClientConnection::check_interval() const {
  const auto& l = ctx_.limits();
  return std::min({idle_timeout_, l.header_timeout, l.send_timeout});
}

ev_tstamp ClientConnection::request_deadline() const {
  const auto& l = ctx_.limits();
  if (!session_)
    return first_byte_ > 0 ? first_byte_ + l.header_timeout : last_activity_ + idle_timeout_;
  if (ev_tstamp t = session_->head_started(); t > 0)
    return t + l.header_timeout;
  return session_->idle() ? last_activity_ + idle_timeout_ : 0;
}

ev_tstamp ClientConnection::send_deadline() const {
  ev_tstamp since = send_waiting_since_;
  if (session_)
    if (ev_tstamp s = session_->oldest_send_wait(); s > 0 && (since == 0 || s < since))
      since = s;
  return since > 0 ? since + ctx_.limits().send_timeout : 0;
}

void ClientConnection::check_within(ev_tstamp t) {
  if (ev_timer_remaining(loop(), &timer_) > t + kSlack) {
    timer_.repeat = std::max(kSlack, t);
    ev_timer_again(loop(), &timer_);
  }
}

void ClientConnection::rearm_timer() {
  ev_tstamp now = ev_now(loop());
  ev_tstamp next = now + check_interval();
  bool open = close_state_ == CloseState::OPEN;
  // A closing connection has no request deadline left, only its output to deliver.
  for (ev_tstamp t : {open ? request_deadline() : 0, send_deadline(),
                      open && session_ ? session_->sleep_due() : 0, open ? tls_rest_due() : 0})
    if (t > 0 && t < next)
      next = t;
  timer_.repeat = std::max(kSlack, next - now);
  ev_timer_again(loop(), &timer_);
}

void ClientConnection::count_session(int protocol) {
  protocol_ = static_cast<int8_t>(protocol);
  ctx_.stats().sessions_opened[protocol][tls_ ? 1 : 0].inc();
}

void ClientConnection::uncount_session() {
  if (protocol_ >= 0)
    ctx_.stats().sessions_closed[protocol_][tls_ ? 1 : 0].inc();
  protocol_ = -1;
}

void ClientConnection::want_flush() {
  if (close_state_ != CloseState::CLOSED)
    ctx_.mark_dirty(this);
}

void ClientConnection::want_input() {
  input_pending_ = true;
  want_flush();
}

void ClientConnection::pause_reading() {
  reading_paused_ = true;
  ev_io_stop(loop(), &rev_);
}

void ClientConnection::resume_reading() {
  if (!reading_paused_)
    return;
  reading_paused_ = false;
  // Input that waited in the buffer is parsed first; the watcher restarts in run_deferred.
  want_input();
}

const char* to_string(ClientConnection::CloseState s) {
  using S = ClientConnection::CloseState;
  switch (s) {
  case S::OPEN: return "open";
  case S::AFTER_FLUSH: return "after_flush";
  case S::AFTER_FLUSH_LINGER: return "after_flush_linger";
  case S::LINGERING: return "lingering";
  case S::CLOSED: return "closed";
  }
  return "?";
}

void ClientConnection::set_close_state(CloseState next) {
  [[maybe_unused]] bool legal = next == CloseState::CLOSED ? close_state_ != CloseState::CLOSED
                                : next == CloseState::LINGERING
                                    ? close_state_ == CloseState::AFTER_FLUSH_LINGER
                                    : close_state_ == CloseState::OPEN && next != CloseState::OPEN;
  assert(legal && "ClientConnection close state transition");
  close_state_ = next;
}

const char* to_string(ClientConnection::Stage s) {
  using S = ClientConnection::Stage;
  switch (s) {
  case S::PROXY_HEADER: return "proxy_header";
  case S::TLS_HANDSHAKE: return "tls_handshake";
  case S::PROTOCOL: return "protocol";
  case S::SESSION: return "session";
  }
  return "?";
}

void ClientConnection::set_stage(Stage next) {
  [[maybe_unused]] bool legal = next == Stage::SESSION
                                    ? stage_ == Stage::TLS_HANDSHAKE || stage_ == Stage::PROTOCOL
                                    : stage_ == Stage::PROXY_HEADER && next != Stage::PROXY_HEADER;
  assert(legal && "ClientConnection stage transition");
  stage_ = next;
}

void ClientConnection::close_after_flush(bool linger) {
  if (close_state_ != CloseState::OPEN)
    return;
  set_close_state(linger ? CloseState::AFTER_FLUSH_LINGER : CloseState::AFTER_FLUSH);
  ev_io_stop(loop(), &rev_);
  want_flush();
}

void ClientConnection::cut_after_flush() {
  if (output_pending() == 0)
    close_now();
  else
    close_after_flush(false);
}

void ClientConnection::close_now() {
  if (close_state_ == CloseState::CLOSED)
    return;
  set_close_state(CloseState::CLOSED);
  if (tls_resting_) {
    tls_resting_ = false;
    ctx_.stats().tls_woke.inc(); // closed in its rest
  }
  if (tls_)
    tls_->shutdown();
  close_socket();
  output_.clear();
  release_file();
  if (session_)
    session_->on_close();
  uncount_session();
  ctx_.mark_dirty(this); // the context destroys it after this iteration
}

void ClientConnection::close_soon() {
  close_soon_ = true;
  want_flush();
}

void ClientConnection::drain() {
  if (close_state_ != CloseState::OPEN)
    return;
  if (stage_ != Stage::SESSION) {
    // Accepted, and its first request not read yet: it is served when it comes, as the
    // session's last (the session made then is told).
    drain_requested_ = true;
    expire_idle_within(ctx_.limits().drain_idle_grace);
    return;
  }
  session_->drain();
}

void ClientConnection::goodbye() {
  if (session_ && close_state_ == CloseState::OPEN)
    session_->goodbye();
}

void ClientConnection::last_words() {
  if (!session_ || close_state_ == CloseState::CLOSED)
    return;
  session_->last_words();
  flush();
}

void ClientConnection::expire_idle_within(ev_tstamp t) {
  if (t >= idle_timeout_ || close_state_ != CloseState::OPEN)
    return;
  idle_timeout_ = t;
  rearm_timer();
}

void ClientConnection::upgrade_to_h2(const UpgradeToH2& up) {
  next_session_ = std::make_unique<Http2ServerSession>(*this, &up);
}

ssize_t ClientConnection::read_some(char* buf, size_t len) {
  if (!tls_)
    return ::recv(fd_, buf, len, 0); // as SocketConnection::read_once: not read()
  size_t n = 0;
  tls_used();
  switch (tls_->read(buf, len, &n)) {
  case tls::TlsSession::Io::OK: return static_cast<ssize_t>(n);
  case tls::TlsSession::Io::CLOSED: return 0;
  case tls::TlsSession::Io::WANT_WRITE:
    ev_io_start(loop(), &wev_); // a TLS read that must write first (a key update)
    [[fallthrough]];
  case tls::TlsSession::Io::WANT_READ: errno = EAGAIN; return -1;
  case tls::TlsSession::Io::ERROR: break;
  }
  errno = ECONNRESET;
  return -1;
}

void ClientConnection::on_readable() {
  if (close_state_ == CloseState::LINGERING) {
    linger_read();
    return;
  }
  if (stage_ == Stage::PROXY_HEADER && !read_proxy_header())
    return;
  if (stage_ == Stage::TLS_HANDSHAKE) {
    // The handshake is the request head's first part: header_timeout runs from its first byte.
    if (first_byte_ == 0)
      first_byte_ = ev_now(loop());
    if (!handshake())
      return;
  }
  for (int i = 0; i < kReadsPerWakeup && close_state_ == CloseState::OPEN; ++i) {
    if (!in_)
      in_ = core::BlockPool::local().get();
    if (in_->writable() == 0) {
      if (in_->begin == 0) {
        // Full of input the session cannot take yet (a pipelined request waits).
        ev_io_stop(loop(), &rev_);
        break;
      }
      std::memmove(in_->data, in_->data + in_->begin, in_->readable());
      in_->end -= in_->begin;
      in_->begin = 0;
    }
    size_t room = in_->writable();
    ssize_t n = read_some(in_->data + in_->end, room);
    if (n > 0) {
      in_->end += static_cast<uint32_t>(n);
      if (!session_ && first_byte_ == 0)
        first_byte_ = ev_now(loop());
      if (!session_ || session_->reads_are_activity())
        last_activity_ = ev_now(loop());
      process_input();
      // OpenSSL may hold decrypted bytes the socket no longer signals: keep reading those.
      if (reading_paused_ || (static_cast<size_t>(n) < room && !(tls_ && tls_->pending())))
        break;
      continue;
    }
    if (n == 0) {
      eof_ = true;
      ev_io_stop(loop(), &rev_);
      process_input();
      if (close_state_ != CloseState::OPEN)
        break;
      if (session_)
        session_->on_eof();
      else
        close_now();
      break;
    }
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN)
      close_now();
    break;
  }
  // What these reads produced leaves now, before the loop reads the next ready connection:
  // responses a handler gave at once (hello, a static file, an admin page) must not wait
  // for every other connection's reads, or at -c100 -m100 ten thousand answered streams
  // (their nghttp2 state, exchanges and buffers) pile up within one pass. Work that comes
  // later in the pass (a proxied response) still leaves in the deferred flush.
  if (close_state_ == CloseState::OPEN &&
      (output_pending() > 0 || (session_ && session_->output_waiting())))
    flush();
}

bool ClientConnection::detect_protocol() {
  std::string_view got(in_->data + in_->begin, in_->readable());
  size_t n = std::min(got.size(), kH2Preface.size());
  if (got.substr(0, n) == kH2Preface.substr(0, n)) {
    if (n < kH2Preface.size()) {
      if (eof_)
        close_now();
      return false; // could still be the preface: wait for the rest
    }
    session_ = std::make_unique<Http2ServerSession>(*this, nullptr);
    count_session(1);
  } else if (got.starts_with(kH2RequestLine)) {
    // HTTP/2's request line and then not its preface: an HTTP/2 client gone wrong, which gets
    // GOAWAY(PROTOCOL_ERROR) from the HTTP/2 session rather than an HTTP/1 answer.
    session_ = std::make_unique<Http2ServerSession>(*this, nullptr);
    count_session(1);
  } else {
    session_ = std::make_unique<Http1ServerSession>(*this);
    count_session(0);
  }
  set_stage(Stage::SESSION);
  if (ctx_.draining() || drain_requested_)
    session_->drain();
  return true;
}

void ClientConnection::process_input() {
  input_pending_ = false;
  if (close_state_ != CloseState::OPEN)
    return;
  if (!in_ || (stage_ != Stage::SESSION &&
               (stage_ != Stage::PROTOCOL || in_->readable() == 0 || !detect_protocol())))
    return;
  while (in_->readable() > 0 && close_state_ == CloseState::OPEN) {
    size_t used = session_->on_input(in_->data + in_->begin, in_->readable());
    in_->begin += static_cast<uint32_t>(used);
    if (next_session_) {
      // The HTTP/1 session handed over to HTTP/2 ("Upgrade: h2c"); it is destroyed here, after
      // its own call has returned.
      session_ = std::move(next_session_);
      uncount_session();
      count_session(1);
      session_->on_activate();
      continue;
    }
    if (used == 0)
      break;
  }
  if (in_ && in_->begin == in_->end) {
    // Nothing left to parse: an idle connection holds no input block (the pool's free list
    // hands one back on the next read, warm).
    core::BlockPool::local().put(in_);
    in_ = nullptr;
  }
}

void ClientConnection::on_writable() {
  if (stage_ == Stage::TLS_HANDSHAKE) {
    if (handshake())
      on_readable(); // application data may have come with the last handshake flight
    return;
  }
  want_flush();
}

void ClientConnection::flush() {
  if (session_ && close_state_ != CloseState::CLOSED)
    session_->before_flush();
  if (close_state_ == CloseState::CLOSED)
    return;
  size_t before = output_pending();
  bool was_high = before >= Exchange::kLowWatermark;
  bool had_file = file_fd_ >= 0;
  if (tls_) {
    if (!output_.empty()) {
      tls_used();
      auto st = tls_->write(output_);
      if (st == tls::TlsSession::Io::ERROR || st == tls::TlsSession::Io::CLOSED) {
        close_now();
        return;
      }
    }
  } else if (!write_plain()) {
    close_now();
    return;
  }
  size_t after = output_pending();
  if (after == 0) {
    ev_io_stop(loop(), &wev_);
    send_waiting_since_ = 0;
    if (session_ && close_state_ == CloseState::OPEN)
      session_->on_output_flushed();
  } else {
    ev_io_start(loop(), &wev_);
    // The clock runs from the last write that moved bytes (nginx's send_timeout), so a client
    // that reads slowly but steadily is never cut.
    if (after < before || send_waiting_since_ == 0) {
      send_waiting_since_ = ev_now(loop());
      send_queued_at_wait_ = socket_queued();
    }
  }
  // A finished file always counts: a pipelined request may wait for it however short it was.
  if (((was_high && after < Exchange::kLowWatermark) || (had_file && file_fd_ < 0)) && session_)
    session_->on_output_drained();
  if (closing_after_flush() && output_pending() == 0) {
    if (close_state_ == CloseState::AFTER_FLUSH_LINGER && !eof_) {
      if (tls_)
        tls_->shutdown(); // close_notify before the FIN
      ::shutdown(fd_, SHUT_WR);
      set_close_state(CloseState::LINGERING);
      ev_io_start(loop(), &rev_);
      timer_.repeat = ctx_.limits().linger_timeout;
      ev_timer_again(loop(), &timer_);
    } else {
      close_now();
    }
  }
}

void ClientConnection::linger_read() {
  char sink[4096];
  for (int i = 0; i < kReadsPerWakeup; ++i) {
    size_t n = 0;
    Read r = read_once(sink, sizeof sink, &n);
    if (r == Read::WOULD_BLOCK)
      return;
    if (r != Read::DATA) {
      close_now(); // the client's FIN (or its reset): nothing left unread to turn a close into one
      return;
    }
  }
  // More to drop, at the next wakeup: closing now, with input unread, would be the reset that
  // lingering is there to avoid.
}

int ClientConnection::socket_queued() const {
  int n = 0;
  return ::ioctl(fd_, SIOCOUTQ, &n) == 0 ? n : -1;
}

void ClientConnection::on_timer() {
  if (close_state_ == CloseState::LINGERING) {
    close_now();
    return;
  }
  ev_tstamp now = ev_now(loop());
  const auto& l = ctx_.limits();
  if (send_waiting_since_ > 0 && now + kSlack >= send_waiting_since_ + l.send_timeout) {
    // The kernel says the socket is writable again only once much of what it holds is gone,
    // which a client reading slowly but steadily may take longer than send_timeout to free:
    // bytes it took from the socket meanwhile are progress, and the clock starts again.
    if (int queued = socket_queued(); queued >= 0 && queued < send_queued_at_wait_) {
      send_waiting_since_ = now;
      send_queued_at_wait_ = queued;
    } else {
      ctx_.stats().count(ClientTimeout::SEND);
      // A reset, not a FIN: the kernel would otherwise keep sending what the socket holds (up
      // to megabytes) to a client that does not read, as an orphan, long after we let go.
      ::linger zero{1, 0};
      ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &zero, sizeof zero);
      close_now();
      return;
    }
  }
  if (session_)
    session_->expire_send_waits(now + kSlack - l.send_timeout);
  ev_tstamp due = close_state_ == CloseState::OPEN ? request_deadline() : 0;
  if (due > 0 && now + kSlack >= due) {
    bool idle = session_ ? session_->head_started() == 0 : first_byte_ == 0;
    ctx_.stats().count(idle ? ClientTimeout::IDLE : ClientTimeout::HEADER);
    if (session_)
      session_->on_timeout();
    else
      close_now();
  }
  if (close_state_ == CloseState::OPEN && session_)
    if (ev_tstamp t = session_->sleep_due(); t > 0 && now + kSlack >= t)
      session_->on_sleep_due();
  if (close_state_ == CloseState::OPEN)
    if (ev_tstamp t = tls_rest_due(); t > 0 && now + kSlack >= t)
      rest_tls(now);
  if (close_state_ == CloseState::OPEN || closing_after_flush())
    rearm_timer();
}

void ClientConnection::run_deferred() {
  if (close_soon_ && close_state_ != CloseState::CLOSED)
    close_now();
  if (close_state_ == CloseState::CLOSED) {
    ctx_.destroy(this);
    return;
  }
  if (input_pending_)
    process_input();
  flush();
  if (close_state_ == CloseState::OPEN && !reading_paused_ && !eof_) {
    if (!in_ || in_->writable() > 0 || in_->begin > 0) {
      ev_io_start(loop(), &rev_);
      // Decrypted bytes left in OpenSSL while reading was paused: no socket event will come.
      if (tls_ && tls_->established() && tls_->pending())
        on_readable();
    }
  }
  if (close_state_ == CloseState::CLOSED)
    ctx_.destroy(this);
}

} // namespace portico::server
