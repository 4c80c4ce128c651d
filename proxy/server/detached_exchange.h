#pragma once
// An exchange with no client: a request the proxy makes of its own routes (a cache's
// revalidation in the background, stale-while-revalidate), run by the worker's handler like
// any other, so that the route's filters see its response as they see every response. What
// reaches this end is dropped. It deletes itself once over.
#include "core/deferred_queue.h"
#include "server/exchange.h"

namespace portico::server {

class DetachedExchange final : public Exchange, public core::Disposable {
public:
  // A copy of head (a GET: no body) goes to handler on loop, as a request on the listener
  // listener_index would.
  static void start(struct ev_loop* loop, RequestHandler& handler, const http::RequestHead& head,
                    uint16_t listener_index, bool over_tls);

  void send_head(const http::ResponseHead& head) override;
  void send_body(std::string_view data) override {}
  void end_response() override { finish(); }
  size_t buffered() const override { return 0; }
  void pause_request_body() override {}
  void resume_request_body() override {}
  void abort() override { finish(); }

private:
  DetachedExchange() = default;
  void finish();
  bool finished_ = false;
};

} // namespace portico::server
