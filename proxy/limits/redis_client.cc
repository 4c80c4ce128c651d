#include "limits/redis_client.h"

#include "core/error_log.h"

#include <hiredis/adapters/libev.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <cstdarg>
#include <cstdio>
#include <map>
#include <random>

namespace portico::limits {

namespace {

constexpr double kFirstBackoff = 0.05, kMaxBackoff = 2.0;

double jitter(double s) {
  thread_local std::minstd_rand rng{std::random_device{}()};
  return s * std::uniform_real_distribution<double>(0.5, 1.0)(rng);
}

} // namespace

std::shared_ptr<RedisClient> RedisClient::of(struct ev_loop* loop, const RedisAddress& address,
                                             double stall_s) {
  thread_local std::map<std::string, std::weak_ptr<RedisClient>> clients;
  auto& entry = clients[address.text + '\n' + address.password];
  auto c = entry.lock();
  if (!c || c->loop_ != loop) { // the first limit's stall_s holds for the others
    c = std::make_shared<RedisClient>(loop, address, stall_s);
    entry = c;
  }
  return c;
}

RedisClient::RedisClient(struct ev_loop* loop, RedisAddress address, double stall_s)
    : loop_(loop), address_(std::move(address)), stall_s_(stall_s),
      counters_(metrics::store_counters(address_.text)) {
  ev_init(&retry_, on_retry);
  retry_.data = this;
  ev_init(&watch_, on_watch);
  watch_.data = this;
  connect();
}

RedisClient::~RedisClient() {
  ev_timer_stop(loop_, &retry_);
  ev_timer_stop(loop_, &watch_);
  if (redisAsyncContext* c = ctx_) {
    if (state_ == UP)
      counters_.connected.fetch_sub(1, std::memory_order_relaxed);
    ctx_ = nullptr;
    state_ = DOWN;
    sent_.clear();
    redisAsyncFree(c); // what is pending is answered with no reply
  }
}

void RedisClient::warn(const char* fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  core::log::write_about(core::log::Level::WARN, core::log::Kind::LIMIT_STORE, address_.text,
                         "redis %s: %s", address_.text.c_str(), what);
}

void RedisClient::connect() {
  redisAsyncContext* c = address_.unix_path.empty()
                             ? redisAsyncConnect(address_.host.c_str(), address_.port)
                             : redisAsyncConnectUnix(address_.unix_path.c_str());
  if (!c || c->err) {
    warn("cannot connect: %s", c ? c->errstr : "out of memory");
    if (c)
      redisAsyncFree(c);
    retry_later();
    return;
  }
  ctx_ = c;
  c->data = this;
  redisLibevAttach(loop_, c);
  redisAsyncSetConnectCallback(c, on_connect);
  redisAsyncSetDisconnectCallback(c, on_disconnect);
  state_ = CONNECTING;
  sent_.clear();
  sent_.push_back(ev_now(loop_)); // the connection itself: unanswered past stall_s, dropped
  ev_timer_set(&watch_, stall_s_ / 2, stall_s_ / 2);
  ev_timer_start(loop_, &watch_);
  if (!address_.password.empty()) {
    const char* argv[] = {"AUTH", address_.password.c_str()};
    size_t lengths[] = {4, address_.password.size()};
    call(2, argv, lengths, nullptr);
  }
}

bool RedisClient::call(int argc, const char** argv, const size_t* lengths, RedisReplyHandler* h) {
  if (state_ == DOWN || redisAsyncCommandArgv(ctx_, on_reply, h, argc, argv, lengths) != REDIS_OK) {
    counters_.count(metrics::StoreResult::DOWN);
    return false;
  }
  sent_.push_back(ev_now(loop_));
  return true;
}

void RedisClient::on_connect(const redisAsyncContext* c, int status) {
  auto* self = static_cast<RedisClient*>(c->data);
  if (self->ctx_ != c)
    return;
  if (status != REDIS_OK) {
    // hiredis frees the context once this returns.
    self->lost(c->errstr);
    return;
  }
  self->state_ = UP;
  self->backoff_s_ = 0;
  self->sent_.pop_front(); // the connection, answered
  self->counters_.connected.fetch_add(1, std::memory_order_relaxed);
  core::log::write(core::log::Level::INFO, core::log::Kind::GENERAL, "redis %s: connected",
                   self->address_.text.c_str());
}

void RedisClient::on_disconnect(const redisAsyncContext* c, int status) {
  auto* self = static_cast<RedisClient*>(c->data);
  if (self->ctx_ != c)
    return; // dropped by drop(): already accounted
  if (self->state_ == UP)
    self->counters_.connected.fetch_sub(1, std::memory_order_relaxed);
  self->lost(status == REDIS_OK ? "closed" : c->errstr);
}

// The context is gone (hiredis frees it): down until a retry connects again.
void RedisClient::lost(const char* why) {
  warn("connection lost: %s", why);
  ctx_ = nullptr;
  state_ = DOWN;
  sent_.clear();
  ev_timer_stop(loop_, &watch_);
  retry_later();
}

void RedisClient::drop(const char* why) {
  redisAsyncContext* c = ctx_;
  if (state_ == UP)
    counters_.connected.fetch_sub(1, std::memory_order_relaxed);
  lost(why);
  if (c)
    redisAsyncFree(c); // its pending commands are answered with no reply, call() refuses
}

void RedisClient::retry_later() {
  backoff_s_ = backoff_s_ == 0 ? kFirstBackoff : std::min(backoff_s_ * 2, kMaxBackoff);
  counters_.reconnects.fetch_add(1, std::memory_order_relaxed);
  ev_timer_stop(loop_, &retry_);
  ev_timer_set(&retry_, jitter(backoff_s_), 0);
  ev_timer_start(loop_, &retry_);
}

void RedisClient::on_retry(struct ev_loop*, ev_timer* w, int) {
  static_cast<RedisClient*>(w->data)->connect();
}

void RedisClient::on_watch(struct ev_loop* loop, ev_timer* w, int) {
  auto* self = static_cast<RedisClient*>(w->data);
  if (!self->sent_.empty() && ev_now(loop) - self->sent_.front() > self->stall_s_)
    self->drop(self->state_ == CONNECTING ? "no connection in time" : "no answer in time");
}

void RedisClient::on_reply(redisAsyncContext* c, void* r, void* data) {
  auto* self = static_cast<RedisClient*>(c->data);
  auto* reply = static_cast<redisReply*>(r);
  if (self->ctx_ == c && !self->sent_.empty()) {
    if (reply)
      self->counters_.observe(ev_now(self->loop_) - self->sent_.front());
    self->sent_.pop_front();
  }
  if (!reply)
    self->counters_.count(metrics::StoreResult::ERROR);
  else if (reply->type == REDIS_REPLY_ERROR) {
    self->counters_.count(metrics::StoreResult::ERROR);
    self->warn("%.*s", static_cast<int>(reply->len), reply->str);
  } else {
    self->counters_.count(metrics::StoreResult::OK);
  }
  if (auto* h = static_cast<RedisReplyHandler*>(data))
    h->on_redis_reply(reply);
}

} // namespace portico::limits
