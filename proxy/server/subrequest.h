#pragma once
// An exchange the proxy makes of one of its own routes and waits on (a route's forward auth,
// nginx's auth_request): run by the worker's handler like any request, so the route it reaches
// (an `internal` one) brings its pools, timeouts, metrics and access log; what its response
// says reaches the Receiver instead of a client. It deletes itself once over.
#include "core/deferred_queue.h"
#include "server/exchange.h"

#include <span>

namespace portico::server {

class Subrequest final : public Exchange, public core::Disposable {
public:
  class Receiver {
  public:
    // The response's status and fields (views valid during the call).
    virtual void on_subrequest_head(int status, std::span<const http::Header> fields) = 0;
    virtual void on_subrequest_body(std::string_view data) = 0;
    // Over: the response whole (complete), or cut short, or none came.
    virtual void on_subrequest_end(bool complete) = 0;

  protected:
    ~Receiver() = default;
  };

  // head (no body) to handler on loop, as a request from client on listener would be. Null
  // when it was over before this returned (receiver was told).
  static Subrequest* start(struct ev_loop* loop, RequestHandler& handler,
                           const http::RequestHead& head, std::string_view client,
                           uint16_t listener, bool over_tls, Receiver* receiver);
  // The receiver goes: it hears nothing more, and the request is abandoned.
  void cancel();

  void send_head(const http::ResponseHead& head) override;
  void send_body(std::string_view data) override;
  void end_response() override { finish(true); }
  size_t buffered() const override { return 0; }
  void pause_request_body() override {}
  void resume_request_body() override {}
  void abort() override { finish(false); }

private:
  Subrequest() = default;
  void finish(bool complete);
  Receiver* receiver_ = nullptr;
  bool finished_ = false;
};

} // namespace portico::server
