#pragma once
// A worker's recorder of its apps' requests into its BackendMetrics slot: per request, one
// index into the slot and a few relaxed stores, at the moment the response is over.
//
// Most apps answer before they return (hello, counter, status...): the request is recorded
// then. An app that answers later sets its own ExchangeListener; the meter then stands between
// the exchange and that listener, forwarding every event, and records when the exchange closes.
// Apps set their listener once, in the function that starts them, never from an event.
#include "backend_metrics.h"
#include "server/exchange.h"

#include <memory>
#include <vector>

namespace portico::backend {

class RequestMeter {
public:
  explicit RequestMeter(WorkerSlot& slot);
  ~RequestMeter();
  RequestMeter(const RequestMeter&) = delete;
  RequestMeter& operator=(const RequestMeter&) = delete;

  // Before the app runs: counts the request in flight and returns its start time.
  double begin();
  // After the app returned with the status it answered (or will answer) with: records the
  // request now when its response is over or the exchange closed under the app, else follows
  // the exchange to its close.
  void end_dispatch(server::Exchange& ex, App app, int status, double started);

  int64_t in_flight() const { return in_flight_; }
  size_t following() const { return followers_.size() - free_.size(); }

private:
  class Follower;
  // status 0: the exchange ended before any response head (the client went away).
  void record(App app, int status, double started);
  void finish(Follower* f, server::Exchange& ex);

  WorkerSlot& slot_;
  int64_t in_flight_ = 0;
  std::vector<std::unique_ptr<Follower>> followers_; // every one made, reused
  std::vector<Follower*> free_;
};

} // namespace portico::backend
