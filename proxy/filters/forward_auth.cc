// A route's `forward_auth` (nginx's auth_request, Caddy's forward_auth, Traefik's forwardAuth):
// before a request goes on, the proxy asks its own `internal` route at `path` (server/
// subrequest.h: the route's cluster, pools, timeouts, metrics and access log) with the
// request's method, the chosen fields and X-Forwarded-Method/-Uri/-Host/-Proto, no body. A 2xx
// lets it through with the `copy` fields of the answer on it (X-User); a 401, 403 or 3xx goes
// back to the client as the auth service gave it (its WWW-Authenticate, Location and a body of
// up to 8 KiB); anything else, no answer within `timeout`, or a reset is `error_status`. The
// request waits meanwhile, its body held back by the chain's watermarks. Decisions are acted
// on from a timer of their own, never inside the auth exchange's calls. With `cache`, a 2xx is
// remembered for that many seconds for the same question (filters/auth_decision_cache.h).
#include "core/monotonic_clock.h"
#include "filters/auth_decision_cache.h"
#include "filters/forward_auth_settings.h"
#include "filters/route_factory.h"
#include "routing/filter.h"
#include "server/subrequest.h"

#include <ev.h>
#include <memory>
#include <utility>
#include <vector>

namespace portico::filters {

namespace {

using routing::FilterStatus;

constexpr size_t kMaxDeniedBody = 8 * 1024;

class ForwardAuthFilter final : public routing::Filter, server::Subrequest::Receiver {
public:
  ForwardAuthFilter(const ForwardAuthSettings& s, AuthDecisionCache* cache)
      : s_(s), cache_(cache) {}
  ~ForwardAuthFilter() override { stop(); }

private:
  FilterStatus on_request_head(http::RequestHead& req) override {
    server::RequestHandler* handler = exchange().handler();
    if (!handler) {
      decide_error("no handler to ask");
      return FilterStatus::STOP;
    }
    http::RequestHead ask;
    ask.method = req.method;
    ask.scheme = req.scheme;
    ask.authority = req.authority;
    ask.target = s_.path;
    ask.version = req.version;
    for (const auto& h : req.headers)
      for (const auto& name : s_.headers)
        if (h.name == name)
          ask.headers.push_back(h);
    ask.headers.push_back({"x-forwarded-method", req.method});
    ask.headers.push_back({"x-forwarded-uri", req.target});
    ask.headers.push_back({"x-forwarded-host", req.authority});
    ask.headers.push_back({"x-forwarded-proto", exchange().over_tls() ? "https" : "http"});
    if (cache_) {
      // The question is all the auth service is shown: the same one gets the same answer.
      key_.clear();
      for (const auto& h : ask.headers)
        key_.append(h.name).append(":").append(h.value).append("\n");
      if (const auto* fields = cache_->find(key_, core::monotonic_ns())) {
        s_.counters->count(metrics::AuthResult::CACHED);
        auto& arena = exchange().arena();
        for (const auto& [name, value] : *fields)
          fields_.push_back({arena.copy(name), arena.copy(value)});
        copy_fields(req);
        return FilterStatus::CONTINUE;
      }
    }
    auto* loop = loop_ = exchange().loop();
    ev_timer_init(&act_, &ForwardAuthFilter::act_cb, 0, 0);
    act_.data = this;
    ev_timer_init(&deadline_, &ForwardAuthFilter::deadline_cb, s_.timeout, 0);
    deadline_.data = this;
    ev_timer_start(loop, &deadline_);
    sub_ = server::Subrequest::start(loop, *handler, ask, exchange_options().client,
                                     exchange().listener_index(), exchange().over_tls(), this);
    if (ended_)
      sub_ = nullptr; // answered before start returned: the decision is already queued
    return FilterStatus::STOP;
  }

  // ---- what the auth request brings (inside its exchange's calls: noted, acted on later) ----

  void on_subrequest_head(int status, std::span<const http::Header> fields) override {
    status_ = status;
    auto& arena = exchange().arena();
    for (const auto& f : fields) {
      bool wanted = f.name == "www-authenticate" || f.name == "location" ||
                    f.name == "content-type" || f.name == "set-cookie";
      for (const auto& name : s_.copy)
        wanted |= f.name == name;
      if (wanted)
        fields_.push_back({arena.copy(f.name), arena.copy(f.value)});
    }
    if (status >= 200 && status < 300)
      decide(); // its body is not needed: the request goes on now
  }

  void on_subrequest_body(std::string_view data) override {
    if (decided_ || body_.size() >= kMaxDeniedBody)
      return;
    body_.append(data.substr(0, kMaxDeniedBody - body_.size()));
    if (body_.size() >= kMaxDeniedBody)
      decide(); // enough of it: the rest is not waited for
  }

  void on_subrequest_end(bool complete) override {
    ended_ = true;
    sub_ = nullptr;
    if (!complete && status_ == 0)
      status_ = -1; // no answer: a reset, a failure to connect
    decide();
  }

  void decide() {
    if (decided_)
      return;
    decided_ = true;
    ev_timer_start(loop_, &act_);
  }

  static void act_cb(struct ev_loop*, ev_timer* w, int) {
    static_cast<ForwardAuthFilter*>(w->data)->act();
  }

  static void deadline_cb(struct ev_loop*, ev_timer* w, int) {
    auto* self = static_cast<ForwardAuthFilter*>(w->data);
    if (self->decided_)
      return;
    self->decided_ = true;
    self->status_ = -1;
    self->act();
  }

  // ---- the decision, from the loop ----

  void act() {
    ev_timer_stop(loop_, &deadline_);
    if (sub_)
      std::exchange(sub_, nullptr)->cancel(); // its answer is not needed any more
    if (status_ >= 200 && status_ < 300) {
      s_.counters->count(metrics::AuthResult::ALLOWED);
      if (cache_) {
        AuthDecisionCache::Fields copied;
        for (const auto& f : fields_)
          for (const auto& name : s_.copy)
            if (f.name == name)
              copied.emplace_back(f.name, f.value);
        cache_->remember(key_, std::move(copied), core::monotonic_ns());
      }
      copy_fields(exchange().mutable_request());
      continue_request();
      return;
    }
    if (status_ == 401 || status_ == 403 || (status_ >= 300 && status_ < 400)) {
      s_.counters->count(metrics::AuthResult::DENIED);
      thread_local std::vector<http::Header> extra;
      extra.clear();
      std::string_view type = "text/plain";
      for (const auto& f : fields_) {
        if (f.name == "content-type")
          type = f.value;
        else if (f.name == "www-authenticate" || f.name == "location" || f.name == "set-cookie")
          extra.push_back(f);
      }
      char why[16];
      std::snprintf(why, sizeof why, " %d", status_);
      exchange_options().limit = exchange().arena().join({s_.name, why});
      std::string_view body = exchange().arena().copy(body_);
      respond(routing::LocalReply{status_, type, body, {extra.data(), extra.size()}});
      return;
    }
    decide_error(status_ < 0 ? "no answer in time, or none at all" : "an answer it cannot use");
  }

  // The `copy` fields of the auth's answer onto the request.
  void copy_fields(http::RequestHead& req) {
    for (const auto& name : s_.copy) {
      // The client's own value never passes for the auth service's.
      std::erase_if(req.headers, [&](const http::Header& h) { return h.name == name; });
      for (const auto& f : fields_)
        if (f.name == name)
          req.headers.push_back(f);
    }
  }

  void decide_error(const char* why) {
    s_.counters->count(metrics::AuthResult::ERROR);
    exchange_options().limit = exchange().arena().join({s_.name, " error"});
    fail(s_.error_status, why);
  }

  void on_exchange_close() override { stop(); }

  void stop() {
    if (sub_)
      std::exchange(sub_, nullptr)->cancel();
    if (loop_) {
      ev_timer_stop(loop_, &act_);
      ev_timer_stop(loop_, &deadline_);
    }
  }

  const ForwardAuthSettings& s_;
  AuthDecisionCache* cache_;       // null without `cache`
  std::string key_;                // the question, when answers are remembered
  struct ev_loop* loop_ = nullptr; // set once the auth is asked: its timers are on it
  server::Subrequest* sub_ = nullptr;
  ev_timer act_{}, deadline_{};
  int status_ = 0; // the auth's answer; -1: none
  bool decided_ = false;
  bool ended_ = false;
  std::vector<http::Header> fields_; // views in the exchange's arena
  std::string body_;                 // of a denial, the first kMaxDeniedBody bytes
};

class ForwardAuthFactory final : public routing::FilterFactory {
public:
  explicit ForwardAuthFactory(const ForwardAuthSettings& s)
      : s_(s),
        cache_(s.cache > 0 ? std::make_unique<AuthDecisionCache>(s.cache, s.cache_size) : nullptr) {
  }
  routing::Filter* create(const server::Exchange&) const override {
    return new ForwardAuthFilter(s_, cache_.get());
  }

private:
  const ForwardAuthSettings& s_;
  std::unique_ptr<AuthDecisionCache> cache_; // the worker's: a factory is its worker's
};

} // namespace

std::unique_ptr<routing::FilterFactory> make_forward_auth(const config::RouteConfig* r,
                                                          metrics::WorkerMetrics&) {
  const auto* s = r ? r->settings_for<ForwardAuthSettings>("forward_auth") : nullptr;
  if (!s)
    return nullptr;
  return std::make_unique<ForwardAuthFactory>(*s);
}

} // namespace portico::filters
