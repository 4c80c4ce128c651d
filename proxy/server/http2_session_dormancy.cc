// Dormancy of an idle HTTP/2 connection: part of Http2ServerSession. Browsers open connections
// ahead of need, clients keep spares, and a page's connection idles for minutes after its
// requests; each held a whole nghttp2 session (its 2.9 KiB struct, a 4 KiB stream map, HPACK
// tables, a 16 KiB frame buffer of which a page or more is touched).
//
// Before the first HEADERS frame, what the session knows is exactly what the client sent (its
// preface, SETTINGS, WINDOW_UPDATEs, PINGs, its ACK of ours) and what we sent in return:
// replaying those bytes into a new session, after the same SETTINGS and window of ours,
// rebuilds the same state, and what it would send again was sent already.
//
// After streams, the state that outlives them is rebuilt from frames written for the purpose:
// the client's settings as they stand, its ACK of ours, and a HEADERS frame on the last stream
// id (unseen by the handler) so that later frames for closed streams are judged as before. The
// connection window the client has left us is a WINDOW_UPDATE when above the initial 65,535,
// else an answer on that stream of as many bytes as are missing, never written. HPACK is what
// cannot be rebuilt: the client's encoder refers to entries of our decoder's table. So before
// sleeping we ask for a table of 0 (SETTINGS_HEADER_TABLE_SIZE, which empties it once the client
// acknowledges, RFC 7541 4.2) and on waking give the 4,096 bytes back. Our encoder needs nothing: a
// new one starts empty, and since HPACK evicts oldest first, entries the client's decoder still
// holds from before are only ever evicted ahead of the new encoder's.
#include "core/error_log.h"
#include "http/nghttp2_check.h"
#include "http/nghttp2_nv.h"
#include "server/client_connection.h"
#include "server/http2_server_session.h"
#include "server/server_context.h"

#include <algorithm>
#include <cstring>

namespace portico::server {

namespace {

constexpr uint32_t kDefaultTableSize = 4096;
constexpr int32_t kInitialWindow = 65535;

// Appends a frame header (RFC 9113 4.1) at p; returns the end.
char* frame_header(char* p, uint32_t length, uint8_t type, uint8_t flags, int32_t stream) {
  const uint8_t h[9] = {
      uint8_t(length >> 16), uint8_t(length >> 8),  uint8_t(length),      type,           flags,
      uint8_t(stream >> 24), uint8_t(stream >> 16), uint8_t(stream >> 8), uint8_t(stream)};
  std::memcpy(p, h, 9);
  return p + 9;
}

char* be32(char* p, uint32_t v) {
  const uint8_t b[4] = {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)};
  std::memcpy(p, b, 4);
  return p + 4;
}

} // namespace

void Http2ServerSession::keep_prelude(const char* data, size_t n) {
  if (!prelude_kept_)
    return;
  if (prelude_len_ + n > kPreludeMax) {
    prelude_kept_ = false; // a talkative client keeps its session
    return;
  }
  std::memcpy(prelude_ + prelude_len_, data, n);
  prelude_len_ = static_cast<uint16_t>(prelude_len_ + n);
}

ev_tstamp Http2ServerSession::sleep_due() const {
  ev_tstamp after = conn_.context().limits().h2_sleep_after;
  if (after <= 0 || !session_ || prelude_kept_ || sleep_wanted_ || lifecycle_ != Lifecycle::OPEN ||
      !streams_.empty() || goaway_received_)
    return 0;
  return quiet_since_ + after;
}

void Http2ServerSession::on_sleep_due() {
  sleep_wanted_ = true;
  if (nghttp2_session_get_hd_inflate_dynamic_table_size(session_) > 0 && !table_shrunk_)
    submit_table_size(0);
  try_sleep();
}

void Http2ServerSession::submit_table_size(uint32_t size) {
  nghttp2_settings_entry iv{NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, size};
  PORTICO_NGHTTP2_MUST(nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, &iv, 1));
  table_shrunk_ = size == 0;
  want_write();
}

void Http2ServerSession::on_output_flushed() {
  try_sleep();
}

bool Http2ServerSession::may_sleep_used() {
  // Nothing in flight that a new session could not be told: our SETTINGS acknowledged (the
  // table of 0 among them, which leaves our decoder empty).
  return sleep_wanted_ && !goaway_received_ && settings_unacked_ == 0 &&
         nghttp2_session_get_hd_inflate_dynamic_table_size(session_) == 0;
}

void Http2ServerSession::try_sleep() {
  if (!session_ || lifecycle_ != Lifecycle::OPEN || upgraded_stream_ || !streams_.empty() ||
      nghttp2_session_want_write(session_) || !nghttp2_session_want_read(session_) ||
      !frames_in_.at_boundary())
    return;
  // Request DATA taken and not yet acknowledged (nghttp2 acknowledges in halves of the window):
  // a new session would owe it nothing, and the client's window would stay that much short
  // for good. Acknowledged first; the sleep follows once that is written.
  if (int32_t owed = nghttp2_session_get_effective_recv_data_length(session_); owed > 0) {
    PORTICO_NGHTTP2_MUST(nghttp2_submit_window_update(session_, NGHTTP2_FLAG_NONE, 0, owed));
    want_write();
    return;
  }
  if (!prelude_kept_) {
    if (!may_sleep_used())
      return;
    write_used_prelude();
  }
  nghttp2_session_del(session_);
  session_ = nullptr;
  sleep_wanted_ = false;
  conn_.context().stats().h2_dormant_entered.inc();
}

void Http2ServerSession::write_used_prelude() {
  static constexpr char kMagic[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  char* p = prelude_;
  std::memcpy(p, kMagic, 24);
  p += 24;
  // The client's settings where they differ from the defaults a new session assumes.
  static constexpr struct {
    nghttp2_settings_id id;
    uint32_t initial;
  } kSettings[] = {
      {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, kDefaultTableSize},
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 1},
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 0xffffffffu},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, uint32_t(kInitialWindow)},
      {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, 16384},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, 0xffffffffu},
      {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 0},
  };
  char* settings = p;
  p += 9;
  for (const auto& s : kSettings)
    if (uint32_t v = nghttp2_session_get_remote_settings(session_, s.id); v != s.initial) {
      *p++ = 0;
      *p++ = static_cast<char>(s.id);
      p = be32(p, v);
    }
  frame_header(settings, static_cast<uint32_t>(p - settings - 9), NGHTTP2_SETTINGS, 0, 0);
  p = frame_header(p, 0, NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0); // of our SETTINGS
  int32_t window = nghttp2_session_get_remote_window_size(session_);
  if (window > kInitialWindow) {
    p = frame_header(p, 4, NGHTTP2_WINDOW_UPDATE, 0, 0);
    p = be32(p, static_cast<uint32_t>(window - kInitialWindow));
  }
  // Streams were opened (prelude_kept_ is false for a talkative client too).
  asleep_last_stream_ = stream_ids_.highest() > 0 ? stream_ids_.highest() : 0;
  asleep_window_debt_ = 0;
  if (asleep_last_stream_ > 0) {
    // GET http://x/ from the static table, :authority without indexing: no table entry.
    static constexpr char kBlock[] = {'\x82', '\x86', '\x84', '\x01', '\x01', 'x'};
    p = frame_header(p, sizeof kBlock, NGHTTP2_HEADERS,
                     NGHTTP2_FLAG_END_STREAM | NGHTTP2_FLAG_END_HEADERS, asleep_last_stream_);
    std::memcpy(p, kBlock, sizeof kBlock);
    p += sizeof kBlock;
    if (window < kInitialWindow) {
      asleep_window_debt_ = static_cast<uint16_t>(kInitialWindow - window);
      // The stream's own window must let the debt through.
      if (nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE) <
          asleep_window_debt_) {
        p = frame_header(p, 4, NGHTTP2_WINDOW_UPDATE, 0, asleep_last_stream_);
        p = be32(p, asleep_window_debt_);
      }
    }
  }
  prelude_len_ = static_cast<uint16_t>(p - prelude_);
}

void Http2ServerSession::settle_last_stream() {
  if (asleep_window_debt_ == 0) {
    PORTICO_NGHTTP2_MUST(nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, asleep_last_stream_,
                                                   NGHTTP2_NO_ERROR));
    return;
  }
  // An answer of debt bytes, framed and dropped: it spends the connection window as the first
  // session's answers had.
  nghttp2_data_provider debt;
  debt.source.ptr = &asleep_window_debt_;
  debt.read_callback = [](nghttp2_session*, int32_t, uint8_t*, size_t length, uint32_t* flags,
                          nghttp2_data_source* source, void*) -> ssize_t {
    auto* left = static_cast<uint16_t*>(source->ptr);
    size_t n = std::min<size_t>(length, *left);
    *left = static_cast<uint16_t>(*left - n);
    if (*left == 0)
      *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  };
  nghttp2_nv status = http::make_nv(":status", "200");
  PORTICO_NGHTTP2_MUST(nghttp2_submit_response(session_, asleep_last_stream_, &status, 1, &debt));
}

void Http2ServerSession::wake() {
  conn_.context().stats().h2_dormant_left.inc();
  new_session();
  send_settings();
  replaying_ = true;
  ssize_t rv =
      nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(prelude_), prelude_len_);
  if (rv == prelude_len_ && asleep_last_stream_ > 0)
    settle_last_stream();
  // Frames the first session already sent (our SETTINGS and window, ACKs, PING answers).
  const uint8_t* discard;
  while (rv >= 0 && nghttp2_session_mem_send(session_, &discard) > 0) {
  }
  replaying_ = false;
  // The same bytes were taken once: only our own mistake can refuse them now.
  if (rv != prelude_len_) {
    core::log::write(core::log::Level::ERROR, core::log::Kind::GENERAL,
                     "HTTP/2: a dormant connection's prelude replayed with %zd", rv);
    fail();
    return;
  }
  if (asleep_last_stream_ > 0) {
    asleep_last_stream_ = 0;
    // Woken by something other than a stream (a PING, a WINDOW_UPDATE): asleep again once it
    // is answered, not at the next check of the timer.
    if (ev_tstamp after = conn_.context().limits().h2_sleep_after; after > 0)
      conn_.check_within(after);
  }
  if (table_shrunk_)
    submit_table_size(kDefaultTableSize);
}

} // namespace portico::server
