#pragma once
// A request's hedge ([[cluster]] hedge): when no response head came within the cluster's hedge
// delay, the same request (head and the whole body, which the exchange still holds) goes to a
// second endpoint as well. Whichever head comes first wins: the hedge hands its stream to the
// exchange and passes on everything it hears after (winning), or the exchange cancels it (an
// h2c stream reset, an HTTP/1.1 connection closed). Owned by its exchange, deleted with it.
#include "core/small_allocator.h"
#include "upstream/upstream_stream_listener.h"

#include <ev.h>

namespace portico::upstream {
class UpstreamPool;
class UpstreamStream;
} // namespace portico::upstream

namespace portico::routing {

class ProxiedExchange;

class Hedge final : public upstream::UpstreamStreamListener, public core::SmallAllocated<Hedge> {
public:
  // Sent after delay seconds, unless cancelled first.
  Hedge(ProxiedExchange& ex, struct ev_loop* loop, double delay);
  ~Hedge() override { cancel(); }
  Hedge(const Hedge&) = delete;
  Hedge& operator=(const Hedge&) = delete;

  // Not sent, or no longer: its timer stopped, out of its pool's queue, its stream detached.
  // Counted as lost when it was on its way.
  void cancel();
  // On its way (queued for a connection, or sent) and neither answered nor failed.
  bool racing() const { return pool_ && !won_; }
  bool won() const { return won_; }
  // The winner's way upstream, which the exchange takes over (with its pool's hold).
  upstream::UpstreamPool* pool() const { return pool_; }
  upstream::UpstreamStream* stream() const { return up_; }
  void handed_over() {
    pool_ = nullptr;
    up_ = nullptr;
  }

private:
  static void timer_cb(struct ev_loop* loop, ev_timer* w, int revents);
  void send();
  void failed();

  void on_upstream_ready(upstream::UpstreamStream& up) override;
  void on_upstream_head(const http::UpstreamResponseHead& head) override;
  void on_upstream_body(std::string_view data) override;
  void on_upstream_trailer(std::string_view name, std::string_view value) override;
  void on_upstream_end() override;
  void on_upstream_error(upstream::UpstreamError e, upstream::Delivery delivery) override;
  void on_upstream_writable() override;
  void on_queue_timeout() override;
  bool is_head_request() const override;

  ProxiedExchange& ex_;
  struct ev_loop* loop_;
  ev_timer timer_;
  upstream::UpstreamPool* pool_ = nullptr; // held while it races, or the winner's
  upstream::UpstreamStream* up_ = nullptr;
  bool won_ = false;
};

} // namespace portico::routing
