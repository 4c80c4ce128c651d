#pragma once
// A deadline for the whole response, the part that the route timeout and gRPC's grpc-timeout
// share: from the request's head to the response's end; on expiry a 504 before the response
// began (DEADLINE_EXCEEDED for gRPC, by the gRPC filter's mapping), a reset after.
#include "routing/filter.h"

#include <ev.h>

namespace portico::filters {

class Deadline : public routing::Filter {
protected:
  Deadline() { ev_init(&timer_, expired); }
  ~Deadline() override { stop(); }
  void start(double seconds);
  void stop();

  routing::FilterStatus on_response_body(std::string_view&, bool end) override {
    if (end)
      stop(); // the response is whole: the client's pace of reading it is not ours to time
    return routing::FilterStatus::CONTINUE;
  }
  routing::FilterStatus on_response_trailers(std::span<const http::Header>&) override {
    stop();
    return routing::FilterStatus::CONTINUE;
  }
  void on_exchange_close() override { stop(); }

private:
  static void expired(struct ev_loop* loop, ev_timer* w, int revents);
  ev_timer timer_;
  struct ev_loop* loop_ = nullptr;
};

} // namespace portico::filters
