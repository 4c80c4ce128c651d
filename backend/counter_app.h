#pragma once
// GET /counter?id=K (and /?id=K): {"counter":N}, incremented in the CounterStore; 503 with the
// reason as JSON when the store cannot answer. The request waits for the store without
// holding the worker: one CounterRequest per request in flight, reused from a free list.
#include "counter_store.h"
#include "server/exchange.h"

#include <memory>
#include <vector>

namespace portico::backend {

class CounterApp {
public:
  explicit CounterApp(CounterStore& store);
  ~CounterApp();
  CounterApp(const CounterApp&) = delete;
  CounterApp& operator=(const CounterApp&) = delete;

  // Answers now or once the store has; returns the status answered, or 200 while waiting.
  int start(server::Exchange& ex, std::string_view id);
  size_t waiting() const { return all_.size() - free_.size(); }

private:
  class Request;
  void release(Request* r);

  CounterStore& store_;
  std::vector<std::unique_ptr<Request>> all_;
  std::vector<Request*> free_;
};

} // namespace portico::backend
