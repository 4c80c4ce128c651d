#pragma once
// A copy of a client's request that the proxy sends to a shadow cluster (a route's `mirror`),
// fire and forget: an exchange with no client, routed straight to that cluster, whose body is
// fed as the client's arrives and whose response is dropped. It never holds the client back
// (its backpressure is ignored: the mirror filter bounds what it is fed) and deletes itself
// once over.
#include "core/counter.h"
#include "core/deferred_queue.h"
#include "server/exchange.h"

namespace portico::server {

class MirrorExchange final : public Exchange, public core::Disposable {
public:
  // Told when the copy is over before its feeder let it go (the shadow answered or failed
  // early): no more body for it.
  class Owner {
  public:
    virtual void on_mirror_gone() = 0;

  protected:
    ~Owner() = default;
  };
  // What became of copies: answered (a status below 500), failed (5xx, or no answer).
  struct Outcomes {
    core::Counter* answered = nullptr;
    core::Counter* failed = nullptr;
  };

  // A copy of head with authority in its place, to the cluster of index shadow_cluster through
  // handler, as a request from client on listener would be; a body follows through body() and
  // end() when body_follows. Null when it was over before this returned.
  static MirrorExchange* start(struct ev_loop* loop, RequestHandler& handler,
                               const http::RequestHead& head, std::string_view authority,
                               bool body_follows, std::string_view client, uint16_t listener,
                               bool over_tls, int32_t shadow_cluster, Outcomes outcomes);
  void set_owner(Owner* owner) { owner_ = owner; }
  // The client's body, as it comes; its end (with trailers, maybe); the feeder lets go (the
  // copy goes on alone), or gives up on it (the body was too large, the client went).
  void body(std::string_view data);
  void end(std::span<const http::Header> trailers = {});
  void release() { owner_ = nullptr; }
  void abandon() {
    owner_ = nullptr;
    outcomes_ = {}; // counted as abandoned by its feeder
    finish();
  }

  void send_head(const http::ResponseHead& head) override;
  void send_body(std::string_view) override {}
  void end_response() override { finish(); }
  size_t buffered() const override { return 0; }
  void pause_request_body() override {}
  void resume_request_body() override {}
  void abort() override { finish(); }

private:
  MirrorExchange() = default;
  void finish();
  Owner* owner_ = nullptr;
  Outcomes outcomes_;
  bool finished_ = false;
};

} // namespace portico::server
