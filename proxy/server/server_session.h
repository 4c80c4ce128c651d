#pragma once
// The protocol side of a client connection: Http1ServerSession or Http2ServerSession. The
// connection owns the socket and buffers; the session turns bytes into exchanges and back.
#include <cstddef>
#include <ev.h>

namespace portico::server {

class ServerSession {
public:
  virtual ~ServerSession() = default;
  // Installed as the connection's session (after an upgrade, with input maybe already queued).
  virtual void on_activate() {}
  // Input arrived. Returns how many bytes were consumed; the rest is offered again later
  // (pipelined requests wait for the exchange in progress).
  virtual size_t on_input(const char* data, size_t len) = 0;
  // The client closed its side.
  virtual void on_eof() = 0;
  // Called just before output is flushed: a session that frames lazily (HTTP/2) writes now.
  virtual void before_flush() {}
  // Frames are waiting to be written into the connection's output (HTTP/2: nghttp2 has
  // something to send); an HTTP/1 session writes into the output directly.
  virtual bool output_waiting() const { return false; }
  // Everything queued has been handed to the socket and nothing more is waiting.
  virtual void on_output_flushed() {}
  // The output queue shrank below the low watermark.
  virtual void on_output_drained() {}
  // No exchange is in progress: an idle timeout may close the connection.
  virtual bool idle() const = 0;
  // When the request head now arriving began (header_timeout runs from then), or 0 while none
  // is: between requests, or while exchanges run at their handler's pace.
  virtual ev_tstamp head_started() const = 0;
  // Whether bytes read count as activity for the idle timeout. HTTP/2 says no: only streams
  // do, so that a client sending PINGs cannot keep an idle connection.
  virtual bool reads_are_activity() const { return true; }
  // The earliest moment since which a stream's response bytes have waited for the client's
  // window, or 0 for none (HTTP/2; on HTTP/1 the connection's own output is what waits).
  virtual ev_tstamp oldest_send_wait() const { return 0; }
  // Resets every stream whose response bytes have waited since `before` or earlier.
  virtual void expire_send_waits(ev_tstamp before) {}
  // The idle or header timeout expired.
  virtual void on_timeout() = 0;
  // When the session may put its state away while it waits for the client (HTTP/2), or 0.
  virtual ev_tstamp sleep_due() const { return 0; }
  // That moment came.
  virtual void on_sleep_due() {}
  // Graceful stop: finish what is in flight, accept nothing new.
  virtual void drain() = 0;
  // The drain window of long-lived exchanges is over (ServerContext::goodbye).
  virtual void goodbye() {}
  // The grace period is over and the connection closes now: a last word to the client, if the
  // protocol has one (HTTP/2: RST_STREAM for every stream still open).
  virtual void last_words() {}
  // The connection is going away: abort every open exchange.
  virtual void on_close() = 0;
};

} // namespace portico::server
