#include "portico/cache_purge.h"

#include "http/request_head.h"
#include "portico/proxy_worker.h"

#include <algorithm>
#include <charconv>
#include <string>

namespace portico::proxy {

namespace {

// A query value's %XX and '+' decoded; false for a malformed escape.
bool decode(std::string_view in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '+') {
      out.push_back(' ');
    } else if (in[i] == '%') {
      // two hex digits, read as server/static_path.cc reads a path's
      unsigned char byte = 0;
      const char* hex = in.data() + i + 1;
      if (i + 2 >= in.size() || std::from_chars(hex, hex + 2, byte, 16).ptr != hex + 2)
        return false;
      out.push_back(static_cast<char>(byte));
      i += 2;
    } else {
      out.push_back(in[i]);
    }
  }
  return true;
}

} // namespace

void PurgeJob::worker_done() {
  if (left.fetch_sub(1, std::memory_order_acq_rel) != 1)
    return;
  std::lock_guard lock(mu_);
  if (done_)
    ev_async_send(admin_loop_, done_);
}

bool parse_purge_url(std::string_view url, routing::PurgeRequest& r) {
  size_t colon = url.find("://");
  if (colon == std::string_view::npos)
    return false;
  std::string_view scheme = url.substr(0, colon);
  if (scheme != "http" && scheme != "https")
    return false;
  std::string_view rest = url.substr(colon + 3);
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (authority.empty() || authority.find_first_of(" \t\r\n@") != std::string_view::npos)
    return false;
  r.scheme = scheme;
  r.authority = authority;
  r.target = slash == std::string_view::npos ? "/" : rest.substr(slash);
  return r.target.find_first_of("\r\n") == std::string::npos;
}

// A purge waiting for its workers, and the exchange to answer; gone with the client.
class CachePurges::Pending final : public server::ExchangeListener {
public:
  Pending(CachePurges& owner, server::Exchange& ex, std::shared_ptr<PurgeJob> job)
      : owner_(owner), ex_(&ex), job_(std::move(job)) {
    ex.set_listener(this);
  }
  bool finished() const { return job_->left.load(std::memory_order_acquire) == 0; }
  PurgeJob& job() { return *job_; }
  // Every worker is done: the answer, once; or, the client gone, nothing.
  void finish() {
    if (!ex_) {
      forget();
      return;
    }
    if (answered_)
      return;
    answered_ = true;
    ex_->respond(200, "application/json",
                 "{\"purged\":" + std::to_string(job_->purged.load()) + "}\n");
  }
  void on_exchange_close(server::Exchange&) override {
    ex_ = nullptr; // answered, or the client left (the workers still purge)
    if (finished())
      forget();
  }
  void forget() {
    std::erase(owner_.pending_, this);
    delete this;
  }

private:
  CachePurges& owner_;
  server::Exchange* ex_;
  std::shared_ptr<PurgeJob> job_;
  bool answered_ = false;
};

CachePurges::CachePurges(const std::vector<std::unique_ptr<ProxyWorker>>& workers,
                         struct ev_loop* loop)
    : workers_(workers), loop_(loop) {
  ev_async_init(&done_, done_cb);
  done_.data = this;
  ev_async_start(loop_, &done_);
}

CachePurges::~CachePurges() {
  ev_async_stop(loop_, &done_);
  for (Pending* p : pending_) {
    std::lock_guard lock(p->job().mu_); // a worker finishing now wakes nobody
    p->job().done_ = nullptr;
    delete p;
  }
}

void CachePurges::start(server::Exchange& ex) {
  const auto& query = ex.request().query();
  std::string url;
  auto job = std::make_shared<PurgeJob>();
  if (!decode(http::query_param(query, "url"), url) || !parse_purge_url(url, job->request)) {
    ex.respond(400, "text/plain",
               "POST /cache/purge?url=http://HOST/PATH (percent-encoded), &prefix=1 for every "
               "URL beginning with it\n");
    return;
  }
  job->request.prefix = http::query_param(query, "prefix") == "1";
  job->admin_loop_ = loop_;
  job->done_ = &done_;
  job->left.store(static_cast<int>(workers_.size()));
  pending_.push_back(new Pending(*this, ex, job));
  for (const auto& w : workers_)
    w->purge(job);
  if (workers_.empty())
    answer_finished();
}

void CachePurges::done_cb(struct ev_loop*, ev_async* w, int) {
  static_cast<CachePurges*>(w->data)->answer_finished();
}

void CachePurges::answer_finished() {
  auto pending = pending_;
  for (Pending* p : pending)
    if (p->finished())
      p->finish(); // may forget it (delete)
}

} // namespace portico::proxy
