#pragma once
// What every connection on a loop has in common, client or upstream (nghttpx's
// shrpx_connection): the socket, its read and write watchers and one timer, their libev
// trampolines, and one read(2) with its errno sorted out. ClientConnection,
// Http1UpstreamConnection and Http2UpstreamConnection each keep their own protocol logic
// and bounded read loop over read_once().
#include "core/deferred_queue.h"

#include <cstddef>
#include <ev.h>

namespace portico::core {

class SocketConnection : public Deferred {
public:
  // Reads per wakeup before other connections get their turn; level-triggered io comes back.
  static constexpr int kReadsPerWakeup = 4;

  // Sets the watchers up on fd; starts none of them.
  SocketConnection(struct ev_loop* loop, int fd);
  // Stops the watchers and closes the socket if it is still open.
  ~SocketConnection() override;
  SocketConnection(const SocketConnection&) = delete;
  SocketConnection& operator=(const SocketConnection&) = delete;

  struct ev_loop* loop() const {
    return loop_;
  }

protected:
  // The socket is readable, writable (or a connect finished), the timer fired.
  virtual void on_readable() = 0;
  virtual void on_writable() = 0;
  virtual void on_timer() = 0;

  enum class Read {
    DATA,        // *n > 0 bytes read
    WOULD_BLOCK, // nothing more for now
    END,         // the peer closed its side
    FAILED,      // reset or another error (errno says which)
  };
  // One read(2) into buf, retried on EINTR.
  Read read_once(char* buf, size_t len, size_t* n);

  // Stops every watcher and closes the socket (fd_ becomes -1). Idempotent.
  void close_socket();
  bool socket_open() const { return fd_ >= 0; }
  // The timer, as a one-shot repeated: fires `seconds` from now (ev_timer_again).
  void arm_timer(double seconds);

  int fd_;
  ev_io rev_;
  ev_io wev_;
  ev_timer timer_;

private:
  static void read_cb(struct ev_loop* loop, ev_io* w, int revents);
  static void write_cb(struct ev_loop* loop, ev_io* w, int revents);
  static void timer_cb(struct ev_loop* loop, ev_timer* w, int revents);

  struct ev_loop* loop_;
};

} // namespace portico::core
