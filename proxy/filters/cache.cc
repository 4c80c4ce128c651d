// A route's `cache`: an HTTP cache (RFC 9111) in front of its cluster. A GET finds its key's
// variants in the worker's store (cache/memory_store.h) and is answered from one that is fresh
// enough for it; a stale one with a validator is revalidated (the request goes upstream made
// conditional, and a 304 refreshes what is stored and answers from it); a miss goes upstream
// and its response, if storable, is kept as it passes. Misses for a key another request is
// already fetching wait for that fetch (bounded by lock_timeout) and are answered from it as
// its body arrives (CacheFill, filters/cache_zone.h). Unsafe methods invalidate the URL and the
// Location and Content-Location they answer with. Every response that passed the cache says
// how in Cache-Status (RFC 9211).
#include "cache/answer.h"
#include "cache/policy.h"
#include "cache/vary.h"
#include "filters/cache_zone.h"
#include "filters/route_factory.h"
#include "routing/filter.h"
#include "server/detached_exchange.h"

#include <charconv>
#include <unistd.h>

namespace portico::filters {

namespace {

using routing::FilterStatus;

class CacheFilter final : public routing::Filter, public CacheFill::Waiter, cache::BodyWatcher {
public:
  explicit CacheFilter(CacheZone& zone) : zone_(zone) {}
  ~CacheFilter() override { release(); }

private:
  // ---- the request ----

  FilterStatus on_request_head(http::RequestHead& req) override {
    loop_ = exchange().loop();
    request_time_ = now();
    if (!cache::safe_method(req.method)) {
      // Answered with success, it invalidates (on_response_head) the key of the URL the client
      // asked for: built now, before a later filter (prefix_rewrite) changes the target.
      unsafe_ = true;
      cache::build_key(zone_.settings.key, req.scheme, req.authority, req.target, req.headers,
                       key_);
      return FilterStatus::CONTINUE;
    }
    if (req.method != "GET" && req.method != "HEAD")
      return FilterStatus::CONTINUE;
    req_cc_ = cache::parse_cache_control(req.headers, "cache-control");
    // The key is built where no allocation is needed, and kept only by a request that goes on
    // (a hit never needs it again).
    thread_local std::string key;
    cache::build_key(zone_.settings.key, req.scheme, req.authority, req.target, req.headers, key);
    authorized_ = req.find("authorization") != nullptr;
    if (req_cc_.no_store) {
      status_ = "fwd=bypass";
      key_ = key;
      return FilterStatus::CONTINUE; // neither answered from the store nor stored
    }
    cache::Variants* v = zone_.find(key);
    pass_ = v && v->pass_until > request_time_;
    lookup_ = v ? select(*v, req) : nullptr;
    status_ = !v || v->list.empty() ? "fwd=uri-miss" : lookup_ ? "fwd=stale" : "fwd=vary-miss";
    if (lookup_) {
      switch (cache::reuse_of(lookup_->fresh, req_cc_, request_time_)) {
      case cache::Reuse::FRESH: answer_now(lookup_, "hit"); return FilterStatus::STOP;
      case cache::Reuse::STALE_OK: answer_now(lookup_, "hit"); return FilterStatus::STOP;
      case cache::Reuse::REVALIDATE:
        if (cache::while_revalidating(lookup_->fresh, req_cc_, request_time_) &&
            revalidate_in_background(req, key)) {
          zone_.metrics.count(metrics::CacheResult::STALE);
          answer_now(lookup_, "hit; detail=stale-while-revalidate");
          return FilterStatus::STOP;
        }
        if (req_cc_.no_cache || lookup_->fresh.no_cache)
          status_ = "fwd=request";
        break;
      }
    }
    if (req_cc_.only_if_cached) {
      fail_reply(504);
      return FilterStatus::STOP;
    }
    key_ = key;
    if (lookup_ && (!lookup_->etag.empty() || !lookup_->last_modified.empty())) {
      make_conditional(req);
      return FilterStatus::CONTINUE;
    }
    stale_ = lookup_; // stale and no validator: fetched anew, but kept for stale-if-error
    lookup_ = nullptr;
    return join_or_fetch(req);
  }

  // The stored variant req selects (RFC 9111 4.1), the newest first; null when none does.
  // The variants of a key mostly vary on the same fields: req's string for them is made once
  // per list of names, not once per variant.
  const cache::StoredResponse* select(cache::Variants& v, const http::RequestHead& req) {
    thread_local std::string vary;
    const std::vector<std::string>* made_of = nullptr;
    for (auto& r : v.list) {
      if (!made_of || *made_of != r->vary_names) {
        cache::vary_key(r->vary_names, req.headers, vary);
        made_of = &r->vary_names;
      }
      if (vary != r->vary_key)
        continue;
      if (authorized_ && !r->auth_ok)
        return nullptr; // a shared cache answers a request with credentials only when allowed
      held_ = r;        // stays while this request uses it, even if the store lets it go
      return r.get();
    }
    return nullptr;
  }

  // Asks the origin whether the stored response is still good: its validators replace the
  // client's own (the client's are answered here, from what comes back).
  void make_conditional(http::RequestHead& req) {
    validating_ = true;
    client_fields_.assign(req.headers.begin(), req.headers.end());
    std::erase_if(req.headers, [](const http::Header& h) {
      return h.name == "if-none-match" || h.name == "if-modified-since";
    });
    if (!lookup_->etag.empty())
      req.headers.push_back({"if-none-match", lookup_->etag});
    if (!lookup_->last_modified.empty())
      req.headers.push_back({"if-modified-since", lookup_->last_modified});
  }

  FilterStatus join_or_fetch(http::RequestHead& req) {
    // A conditional or partial request may get a 304 or a 206, which no other request could
    // use: it neither fetches for others nor waits.
    if (zone_.settings.lock_timeout <= 0 || req.is_head() || pass_ || req.find("if-none-match") ||
        req.find("if-modified-since") || req.find("range"))
      return FilterStatus::CONTINUE;
    CacheFill* fill = zone_.fill_for(key_);
    if (!fill) {
      fill = zone_.start_fill(key_);
      if (!fill->remote()) {
        fill_ = fill; // this request fetches; others wait on it
        return FilterStatus::CONTINUE;
      }
    }
    if (fill->response()) {
      fill_ready(*fill);
      return answered_ ? FilterStatus::STOP : FilterStatus::CONTINUE;
    }
    fill->wait(this);
    waiting_ = fill;
    zone_.metrics.waiting.add(1);
    ev_timer_init(&wait_timer_, &CacheFilter::on_wait_timeout, zone_.settings.lock_timeout, 0);
    wait_timer_.data = this;
    ev_timer_start(loop_, &wait_timer_);
    return FilterStatus::STOP;
  }

  static void on_wait_timeout(struct ev_loop*, ev_timer* w, int) {
    auto* self = static_cast<CacheFilter*>(w->data);
    if (self->waiting_)
      self->waiting_->leave(self);
    self->fill_gone(); // the fetch is taking too long: this one goes itself
  }

  // CacheFill::Waiter: the fill this request waited on has a stored response to share, or
  // none (it was not storable, or the fetch failed): then it goes upstream itself.
  void fill_ready(CacheFill& fill) override {
    bool held = stop_waiting();
    const auto& req = exchange().request();
    auto r = fill.response();
    thread_local std::string vary;
    if (r) {
      cache::vary_key(r->vary_names, req.headers, vary);
      if (vary == r->vary_key && (!authorized_ || r->auth_ok) &&
          (r->fresh.ttl(now()) > 0 ||
           cache::reuse_of(r->fresh, req_cc_, now()) != cache::Reuse::REVALIDATE)) {
        held_ = r;
        zone_.metrics.count(metrics::CacheResult::COLLAPSED);
        answer_now(held_.get(), "hit; detail=collapsed");
        return;
      }
    }
    if (held)
      continue_request(); // upstream after all: the head was held here
  }
  void fill_gone() override {
    if (stop_waiting() && !answered_)
      continue_request(); // upstream after all: the head was held here
  }
  // Whether this request was waiting (its head held here).
  bool stop_waiting() {
    if (!waiting_)
      return false;
    waiting_ = nullptr;
    zone_.metrics.waiting.add(-1);
    ev_timer_stop(loop_, &wait_timer_);
    return true;
  }

  // ---- the response ----

  FilterStatus on_response_head(routing::FilterResponseHead& head) override {
    if (unsafe_) {
      if (head.status >= 200 && head.status < 400 &&
          head.source == routing::ResponseSource::UPSTREAM)
        invalidate(*head.fields);
      return FilterStatus::CONTINUE;
    }
    if (key_.empty() || head.tunnel)
      return FilterStatus::CONTINUE;
    time_t t = now();
    if (validating_ && head.status == 304 && head.source == routing::ResponseSource::UPSTREAM) {
      refresh_and_answer(head, "fwd=stale; fwd-status=304", t);
      return FilterStatus::CONTINUE;
    }
    if (const cache::StoredResponse* stored = lookup_ ? lookup_ : stale_;
        stored && exchange().request().is_head() && head.status == 200 &&
        head.source == routing::ResponseSource::UPSTREAM) {
      // A HEAD's 200 freshens the GET it could have been (RFC 9111 4.3.5), or, describing
      // another representation, invalidates it.
      if (cache::same_representation(*stored, *head.fields)) {
        lookup_ = stored;
        refresh_and_answer(head, "fwd=stale; fwd-status=200", t);
        return FilterStatus::CONTINUE;
      }
      zone_.erase(key_);
    }
    if (const cache::StoredResponse* stale = lookup_ ? lookup_ : stale_;
        stale && head.status >= 500 && cache::usable_on_error(stale->fresh, req_cc_, t)) {
      lookup_ = stale;
      zone_.metrics.count(metrics::CacheResult::STALE);
      replace_with(head, "fwd=stale; detail=stale-if-error");
      return FilterStatus::CONTINUE;
    }
    zone_.end_revalidation(key_);   // a background one's answer, or one as good
    head.date = head.upstream_date; // what is stored is what was sent: the origin's Date
    zone_.metrics.count(status_ == "fwd=bypass" ? metrics::CacheResult::BYPASS
                                                : metrics::CacheResult::MISS);
    if (head.source == routing::ResponseSource::UPSTREAM && !exchange().request().is_head())
      store_begin(head, t);
    if (!storing_ && fill_) { // the waiters go upstream, and misses to come do not wait
      zone_.end_fill(fill_, authorized_ ? 0 : t + zone_.settings.pass_for);
      fill_ = nullptr;
    }
    add_status(*head.fields, storing_ ? "; stored" : "");
    return FilterStatus::CONTINUE;
  }

  FilterStatus on_response_body(std::string_view& data, bool end) override {
    if (storing_) {
      if (body_->size() + data.size() > zone_.settings.max_object) {
        give_up();
      } else {
        body_->append(data);
        if (fill_)
          zone_.grow_fill(fill_, data);
        if (end)
          store_end();
      }
    }
    return FilterStatus::CONTINUE;
  }

  FilterStatus on_response_trailers(std::span<const http::Header>& trailers) override {
    if (storing_)
      give_up(); // trailers are not stored: the response cannot be given again whole
    return FilterStatus::CONTINUE;
  }

  // The client went mid-body: what is being stored is read to its end all the same, for the
  // requests streaming it (a fill's waiters, on any worker) and those to come.
  bool keeps_response() const override { return storing_; }

  void store_begin(routing::FilterResponseHead& head, time_t t) {
    const auto& s = zone_.settings;
    auto cc = cache::response_directives(s.targeted, *head.fields);
    if (!cache::storable(head.status, *head.fields, cc, authorized_))
      return;
    if (s.set_cookie == CacheSettings::SetCookie::PASS && cache::sets_cookie(*head.fields))
      return;
    int64_t cl = head.content_length;
    if (cl > static_cast<int64_t>(s.max_object))
      return;
    std::vector<std::string> names;
    if (!cache::vary_names(*head.fields, names))
      return;
    auto r = cache::make_stored(head.status, *head.fields, cc, head.upstream_date);
    r->fresh = cache::freshness_of(head.status, cc, *head.fields, head.upstream_date, request_time_,
                                   t, s.freshness);
    r->auth_ok = !authorized_ || cc.public_ || cc.must_revalidate || cc.s_maxage >= 0;
    r->vary_names = std::move(names);
    cache::vary_key(r->vary_names, exchange().request().headers, r->vary_key);
    r->length = cl;
    r->body = body_ = std::make_shared<cache::StoredBody>();
    if (cl > 0)
      body_->bytes.reserve(static_cast<size_t>(cl));
    filling_ = std::move(r);
    storing_ = true;
    if (fill_)
      zone_.share_fill(fill_, filling_);
    if (cl == 0)
      store_end();
  }

  // The same request again, made by the proxy itself (server/detached_exchange.h) through the
  // same route, with max-age=0 so that it revalidates: its response refreshes the store. One
  // at a time per key; false when none can be made (then this request revalidates).
  bool revalidate_in_background(const http::RequestHead& req, const std::string& key) {
    server::RequestHandler* handler = exchange().handler();
    if (!handler)
      return false;
    if (!zone_.start_revalidation(key, request_time_))
      return true; // one is under way: the stale response stands meanwhile
    http::RequestHead bg;
    bg.method = "GET";
    bg.scheme = req.scheme;
    bg.authority = req.authority;
    bg.target = req.target;
    bg.version = req.version;
    for (const auto& h : req.headers)
      if (h.name != "if-none-match" && h.name != "if-modified-since" && h.name != "range" &&
          h.name != "if-range" && h.name != "cache-control")
        bg.headers.push_back(h);
    bg.headers.push_back({"cache-control", "max-age=0"});
    server::DetachedExchange::start(exchange().loop(), *handler, bg, exchange().listener_index(),
                                    exchange().over_tls());
    return true;
  }

  void store_end() {
    storing_ = false;
    filling_->length = static_cast<int64_t>(body_->bytes.size());
    body_->bytes.shrink_to_fit();
    body_->finish(true);
    zone_.put(key_, filling_);
    zone_.end_revalidation(key_);
    if (fill_)
      zone_.end_fill(fill_, 0, filling_);
    fill_ = nullptr;
  }

  void give_up() {
    storing_ = false;
    body_->finish(false);
    if (fill_)
      zone_.end_fill(fill_, 0);
    fill_ = nullptr;
  }

  // A 304 to our conditional request (or a HEAD's 200 of the same representation): the
  // stored response, with its fields, is stored again and answers. Unless the route stores
  // them, its Set-Cookie lines are this client's alone: they go into the answer, not the store.
  void refresh_and_answer(routing::FilterResponseHead& head, std::string_view status, time_t t) {
    std::span<const http::Header> stored = *head.fields;
    std::vector<http::Header> kept, cookies;
    if (zone_.settings.set_cookie == CacheSettings::SetCookie::PASS && cache::sets_cookie(stored)) {
      for (const auto& f : stored)
        (cache::cookie_field(f.name) ? cookies : kept).push_back(f);
      for (auto& c : cookies) // the answer's fields outlive the upstream's
        c = {exchange().arena().copy(c.name), exchange().arena().copy(c.value)};
      stored = kept;
    }
    refresh(stored, head.upstream_date, t);
    replace_with(head, status);
    head.fields->insert(head.fields->end(), cookies.begin(), cookies.end());
  }

  // A 304 to our conditional request: the stored response, with the 304's fields, is
  // stored again and answers.
  void refresh(std::span<const http::Header> fields, std::string_view date, time_t t) {
    auto r = cache::updated_by(*lookup_, fields, date);
    auto cc = cache::response_directives(zone_.settings.targeted, r->fields);
    r->fresh = cache::freshness_of(r->status, cc, r->fields, r->date, request_time_, t,
                                   zone_.settings.freshness);
    zone_.put(key_, r);
    zone_.metrics.count(metrics::CacheResult::REVALIDATED);
    zone_.end_revalidation(key_);
    held_ = std::move(r); // the old one may go with it
    lookup_ = held_.get();
    stale_ = nullptr;
  }

  void invalidate(std::span<const http::Header> fields) {
    const auto& req = exchange().request();
    thread_local std::string key;
    zone_.erase(key_);
    std::string_view origin = exchange().arena().join({req.scheme, "://", req.authority});
    for (const auto& f : fields) {
      if (f.name != "location" && f.name != "content-location")
        continue;
      std::string_view target = f.value;
      if (target.starts_with(origin))
        target.remove_prefix(origin.size()); // the same origin only (RFC 9111 4.4)
      if (!target.starts_with('/'))
        continue;
      cache::build_key(zone_.settings.key, req.scheme, req.authority, target, req.headers, key);
      zone_.erase(key);
    }
  }

  // ---- answering from the store ----

  void answer_now(const cache::StoredResponse* r, std::string_view status) {
    routing::FilterResponseHead head;
    if (status == "hit")
      zone_.metrics.count(metrics::CacheResult::HIT);
    build(*r, status, exchange().request(), head);
    answered_ = true;
    respond_head(head);
    produce();
  }

  // Answers with lookup_ in place of the response whose head this is.
  void replace_with(routing::FilterResponseHead& head, std::string_view status) {
    if (validating_) {
      // The client's own conditions (and none of ours) are judged against what is stored.
      auto& req = exchange().mutable_request();
      req.headers.assign(client_fields_.begin(), client_fields_.end());
    }
    build(*lookup_, status, exchange().request(), head);
    answered_ = true;
    replace_response();
  }

  void build(const cache::StoredResponse& r, std::string_view status, const http::RequestHead& req,
             routing::FilterResponseHead& head) {
    set_status(exchange().arena().join({zone_.settings.name, "; ", status}));
    // One vector per thread: the head is sent, or copied by the chain, before this returns
    // to the loop, and no other answer is built meanwhile.
    thread_local std::vector<http::Header> fields;
    auto a = cache::answer_from(r, req, now(), cache_status_, fields, age_, content_range_);
    head.status = a.status;
    head.content_length = a.content_length;
    head.fields = &fields;
    head.source = routing::ResponseSource::LOCAL;
    head.date = a.date;
    body_read_ = r.body;
    pos_ = a.offset;
    end_ = a.length < 0 ? -1 : a.offset + a.length;
    if (req.is_head() || a.length == 0)
      end_ = pos_;
    if (body_read_ && !body_read_->complete && end_ != pos_) {
      body_read_->watch(this);
      watching_ = true;
    }
  }

  void on_body_grew() override { produce(); }
  void on_response_writable() override { produce(); }

  void produce() {
    if (!body_read_ || producing_ || closed_)
      return;
    producing_ = true;
    send_by_kernel();
    while (!closed_ && !response_blocked()) {
      std::string_view bytes = body_read_->data(); // moves to a memory file once complete
      int64_t have = static_cast<int64_t>(bytes.size());
      int64_t stop = end_ < 0 ? have : std::min(end_, have);
      if (pos_ >= stop)
        break;
      size_t n = static_cast<size_t>(std::min<int64_t>(stop - pos_, 64 << 10));
      std::string_view chunk(bytes.data() + pos_, n);
      pos_ += static_cast<int64_t>(n);
      pass_response_body(chunk, false);
    }
    producing_ = false;
    if (closed_)
      return;
    int64_t size = static_cast<int64_t>(body_read_->size());
    bool all = end_ >= 0 ? pos_ >= end_ : body_read_->complete && pos_ >= size;
    if (all) {
      finish_body();
      pass_response_body({}, true);
    } else if (body_read_->failed) {
      finish_body();
      fail(502, "the response this request shared failed while it arrived");
    }
  }

  // The rest of a complete body in a memory file goes by sendfile when nothing between here
  // and a cleartext HTTP/1.1 client reads it.
  void send_by_kernel() {
    if (body_read_->fd() < 0 || !body_read_->complete)
      return;
    int64_t end = end_ < 0 ? static_cast<int64_t>(body_read_->size()) : end_;
    if (end - pos_ < static_cast<int64_t>(cache::StoredBody::kFileAtLeast))
      return;
    int fd = ::dup(body_read_->fd()); // the connection closes the one it is given
    if (fd < 0)
      return;
    if (!send_response_file(fd, body_read_->file_offset() + pos_, end - pos_)) {
      ::close(fd);
      return;
    }
    pos_ = end;
  }

  void finish_body() {
    // Only a body still arriving is watched: a complete one may be another worker's too
    // (a fill's DONE), whose watcher list only its own worker touches.
    if (body_read_ && watching_)
      body_read_->unwatch(this);
    watching_ = false;
    body_read_ = nullptr;
  }

  void fail_reply(int status) {
    answered_ = true;
    thread_local http::Header extra[1];
    set_status(exchange().arena().join({zone_.settings.name, "; fwd=miss; detail=only-if-cached"}));
    extra[0] = {"cache-status", cache_status_};
    respond(routing::LocalReply{status, "text/plain", "Gateway Timeout\n", {extra, 1}});
  }

  void add_status(std::vector<http::Header>& fields, std::string_view more) {
    set_status(exchange().arena().join({zone_.settings.name, "; ", status_, more}));
    fields.push_back({"cache-status", cache_status_});
  }

  void on_exchange_close() override {
    closed_ = true;
    release();
  }

  void release() {
    finish_body();
    if (CacheFill* w = waiting_) {
      stop_waiting();
      w->leave(this);
    }
    if (storing_)
      give_up();
    if (fill_) {
      zone_.end_fill(fill_, 0);
      fill_ = nullptr;
    }
  }

  // The Cache-Status value this response carries, also for the access log's $cache_status.
  void set_status(std::string_view v) {
    cache_status_ = v;
    exchange_options().cache_status = v;
  }

  time_t now() const { return static_cast<time_t>(ev_now(loop_)); }

  CacheZone& zone_;
  struct ev_loop* loop_ = nullptr;
  std::string key_;
  cache::CacheControl req_cc_;
  time_t request_time_ = 0;
  std::string_view status_;
  std::string_view cache_status_;
  bool unsafe_ = false;
  bool authorized_ = false;
  bool validating_ = false;
  bool pass_ = false;
  ev_timer wait_timer_;
  bool answered_ = false;
  bool storing_ = false;
  bool producing_ = false;
  bool watching_ = false; // body_read_ tells this filter as it grows
  bool closed_ = false;
  const cache::StoredResponse* lookup_ = nullptr; // being revalidated
  const cache::StoredResponse* stale_ = nullptr;  // fetched anew (no validator)
  std::shared_ptr<cache::StoredResponse> held_;
  std::vector<http::Header> client_fields_;
  // storing
  std::shared_ptr<cache::StoredResponse> filling_;
  std::shared_ptr<cache::StoredBody> body_;
  CacheFill* fill_ = nullptr;    // the fill this request makes
  CacheFill* waiting_ = nullptr; // the fill it waits on
  // answering
  std::shared_ptr<cache::StoredBody> body_read_; // kept while its bytes are sent
  int64_t pos_ = 0, end_ = 0;
  char age_[24];
  char content_range_[server::kContentRangeMax];
};

class CacheFactory final : public routing::FilterFactory {
public:
  CacheFactory(const CacheSettings& s, metrics::WorkerMetrics& m) : zone_(s, m) {}
  routing::Filter* create(const server::Exchange& ex) const override {
    zone_.attach(ex.loop());
    return new CacheFilter(zone_);
  }
  size_t purge(const routing::PurgeRequest& r) override { return zone_.purge(r); }
  void start(struct ev_loop* loop) override { zone_.attach(loop); }

private:
  mutable CacheZone zone_; // the worker's store for the route
};

} // namespace

std::unique_ptr<routing::FilterFactory> make_cache(const config::RouteConfig* r,
                                                   metrics::WorkerMetrics& metrics) {
  const auto* s = r ? r->settings_for<CacheSettings>("cache") : nullptr;
  if (!s)
    return nullptr;
  return std::make_unique<CacheFactory>(*s, metrics);
}

} // namespace portico::filters
