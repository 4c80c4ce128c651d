#pragma once
// A worker's connection to the Redis that shared limits keep their state in: hiredis' async
// client on the worker's libev loop (hiredis' adapters/libev.h), so that no call ever blocks
// the loop. One per worker and address, shared by every shared limit of that worker
// (RedisClient::of); commands are pipelined on it and answered in order.
//
// It reconnects on its own, with exponential backoff and jitter (50 ms doubling up to 2 s),
// when the connection fails, closes, replies what is not RESP, or stops answering: a command
// unanswered for stall_s is taken as a Redis that hangs, and the connection is dropped (every
// pending command then gets its callback with no reply). While it is down, call() refuses at
// once: a caller never waits on a Redis that is known to be gone.
#include "metrics/limit_counters.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>

#include <ev.h>

struct redisAsyncContext;
struct redisReply;

namespace portico::limits {

struct RedisAddress {
  std::string host; // an IP address (hiredis would resolve a name with a blocking call)
  int port = 6379;
  std::string unix_path; // instead of host and port
  std::string password;  // AUTH, when not empty
  std::string text;      // as configured: the store's label in metrics and logs
};

// What a command's answer goes to: reply is null when it got none (the connection failed or
// was dropped).
struct RedisReplyHandler {
  virtual void on_redis_reply(redisReply* reply) = 0;
  virtual ~RedisReplyHandler() = default;
};

class RedisClient {
public:
  // The worker's client for address (made, and connecting, the first time this thread asks).
  // When a configuration is read on the worker's thread, never on a request.
  static std::shared_ptr<RedisClient> of(struct ev_loop* loop, const RedisAddress& address,
                                         double stall_s);
  RedisClient(struct ev_loop* loop, RedisAddress address, double stall_s);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  bool up() const { return state_ == UP; }
  // Sends argv; h->on_redis_reply follows exactly once, unless call returns false (down: it is
  // never called). h lives until then.
  bool call(int argc, const char** argv, const size_t* lengths, RedisReplyHandler* h);
  const RedisAddress& address() const { return address_; }
  // What became of a command, in this Redis' counters (a caller's deadline: TIMEOUT).
  void count(metrics::StoreResult r) { counters_.count(r); }

private:
  enum State { DOWN, CONNECTING, UP };
  void connect();
  void lost(const char* why);
  void retry_later();
  void drop(const char* why);
  void warn(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  static void on_connect(const redisAsyncContext* c, int status);
  static void on_disconnect(const redisAsyncContext* c, int status);
  static void on_reply(redisAsyncContext* c, void* reply, void* data);
  static void on_retry(struct ev_loop*, ev_timer* w, int);
  static void on_watch(struct ev_loop*, ev_timer* w, int);

  struct ev_loop* loop_;
  RedisAddress address_;
  double stall_s_;
  metrics::StoreCounters& counters_;
  redisAsyncContext* ctx_ = nullptr;
  State state_ = DOWN;
  double backoff_s_ = 0;
  ev_timer retry_{};
  ev_timer watch_{};           // the oldest command unanswered too long: Redis hangs
  std::deque<ev_tstamp> sent_; // when each unanswered command was sent, oldest first
};

} // namespace portico::limits
