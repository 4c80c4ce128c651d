#pragma once
// The admin endpoint's POST /cache/purge?url=URL[&prefix=1]: every worker's caches drop the
// stored responses of URL (or of every URL beginning with it), on their own loops; the answer
// ({"purged": N}, URLs dropped over all workers and routes) waits until every worker has done
// so, without stalling the admin loop.
#include "routing/filter.h"
#include "server/exchange.h"

#include <atomic>
#include <ev.h>
#include <memory>
#include <mutex>
#include <vector>

namespace portico::proxy {

class ProxyWorker;

// One purge, shared by the workers that carry it out and the admin loop that answers it.
struct PurgeJob {
  routing::PurgeRequest request;
  std::atomic<size_t> purged{0};
  std::atomic<int> left{0}; // workers yet to do it
  // The last worker wakes the admin loop, unless it has gone (shut down) meanwhile.
  void worker_done();

private:
  friend class CachePurges;
  std::mutex mu_; // the admin thread and a worker, once per purge: never the request path
  struct ev_loop* admin_loop_ = nullptr;
  ev_async* done_ = nullptr;
};

class CachePurges {
public:
  CachePurges(const std::vector<std::unique_ptr<ProxyWorker>>& workers, struct ev_loop* loop);
  ~CachePurges();
  CachePurges(const CachePurges&) = delete;
  CachePurges& operator=(const CachePurges&) = delete;
  // Answers ex: 400 for a request without an absolute http(s) URL, else once it is done.
  void start(server::Exchange& ex);

private:
  class Pending;
  static void done_cb(struct ev_loop* loop, ev_async* w, int revents);
  void answer_finished();

  const std::vector<std::unique_ptr<ProxyWorker>>& workers_;
  struct ev_loop* loop_;
  ev_async done_;
  std::vector<Pending*> pending_;
};

// url (an absolute http or https URL, percent-decoded) into r's scheme, authority and target;
// false when it is none.
bool parse_purge_url(std::string_view url, routing::PurgeRequest& r);

} // namespace portico::proxy
