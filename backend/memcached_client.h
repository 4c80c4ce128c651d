#pragma once
// The counter in memcached without blocking the worker: memcached's text protocol on the
// worker's libev loop, one TCP connection per worker, commands pipelined (written as requests
// come, answered in order). "incr counter:K 1"; on NOT_FOUND "add counter:K 0 0 1" with "1";
// on NOT_STORED (another worker added it first) incr once more. A dead or silent memcached
// fails what waits (1 s without an answer, or a refused or lost connection) and is tried again
// a second later; meanwhile requests fail at once, so the app answers 503 without waiting.
#include "core/byte_queue.h"
#include "counter_store.h"

#include <deque>
#include <ev.h>
#include <string>
#include <sys/socket.h>

namespace portico::backend {

class MemcachedClient final : public CounterStore {
public:
  // address: "HOST:PORT" (the part after memcached://), HOST numeric or a name resolved now.
  MemcachedClient(struct ev_loop* loop, const std::string& address);
  ~MemcachedClient() override;
  MemcachedClient(const MemcachedClient&) = delete;
  MemcachedClient& operator=(const MemcachedClient&) = delete;

  void increment(std::string_view key, CounterWaiter* waiter) override;
  void cancel(CounterWaiter* waiter) override;

private:
  enum class Step : uint8_t { INCR, ADD, INCR_AGAIN };
  // A command written and not yet answered (memcached answers in order).
  struct Sent {
    Step step;
    std::string key;
    CounterWaiter* waiter; // null once cancelled
  };

  static void io_cb(struct ev_loop* loop, ev_io* w, int revents);
  static void timer_cb(struct ev_loop* loop, ev_timer* w, int revents);
  bool connect();
  void send(Step step, const std::string& key, CounterWaiter* waiter);
  void on_io(int revents);
  void flush();
  // One reply line: what it means for the oldest command.
  void on_line(std::string_view line);
  void fail_all(const std::string& why);
  void arm_timer();

  struct ev_loop* loop_;
  sockaddr_storage addr_{};
  socklen_t addr_len_ = 0;
  std::string address_;
  std::string resolve_error_;
  int fd_ = -1;
  bool connected_ = false;
  double retry_at_ = 0;      // ev_now() before which a failed memcached is not tried again
  double last_progress_ = 0; // a reply arrived, or the first command went out
  ev_io io_;
  ev_timer timer_;
  core::ByteQueue out_;
  std::string in_;
  std::deque<Sent> sent_;
};

} // namespace portico::backend
