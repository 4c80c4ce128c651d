#pragma once
// The protocol side of a client connection: Http1ServerSession or Http2ServerSession. The
// connection owns the socket and buffers; the session turns bytes into exchanges and back.
#include <cstddef>

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
  // The output queue shrank below the low watermark.
  virtual void on_output_drained() {}
  // No exchange is in progress: an idle timeout may close the connection.
  virtual bool idle() const = 0;
  // The idle or header timeout expired.
  virtual void on_timeout() = 0;
  // Graceful stop: finish what is in flight, accept nothing new.
  virtual void drain() = 0;
  // The connection is going away: abort every open exchange.
  virtual void on_close() = 0;
};

} // namespace portico::server
