#include "routing/filter_chain.h"

#include <cassert>

namespace portico::routing {

namespace {
constexpr size_t kHigh = server::Exchange::kHighWatermark;
constexpr size_t kLow = server::Exchange::kLowWatermark;
} // namespace

// Filter's helpers: each forwards to its chain with the filter's place in it.
server::Exchange& Filter::exchange() const {
  return chain_->exchange();
}
ExchangeOptions& Filter::exchange_options() const {
  return chain_->exchange_options();
}
void Filter::continue_request() {
  chain_->continue_request(index_);
}
void Filter::continue_response() {
  chain_->continue_response(index_);
}
void Filter::pass_request_body(std::string_view data, bool end) {
  chain_->pass_request_body(index_, data, end);
}
void Filter::pass_request_trailers(std::span<const http::Header> trailers) {
  chain_->pass_request_trailers(index_, trailers);
}
void Filter::pass_response_body(std::string_view data, bool end) {
  chain_->pass_response_body(index_, data, end);
}
void Filter::pass_response_trailers(std::span<const http::Header> trailers) {
  chain_->pass_response_trailers(index_, trailers);
}
void Filter::respond(const LocalReply& reply) {
  chain_->respond(index_, reply);
}
void Filter::respond_head(FilterResponseHead& head) {
  chain_->respond_head(index_, head);
}
bool Filter::response_blocked() const {
  return chain_->response_blocked();
}
void Filter::replace_response() {
  chain_->replace_response(index_);
}
bool Filter::send_response_file(int fd, int64_t offset, int64_t length) {
  return chain_->send_response_file(index_, fd, offset, length);
}
void Filter::fail(int status, const char* why) {
  chain_->fail(index_, status, why);
}

FilterChain* FilterChain::make(std::span<const std::unique_ptr<FilterFactory>> factories,
                               server::Exchange& ex, Terminal& terminal, ExchangeOptions& options) {
  FilterChain* chain = nullptr;
  for (const auto& factory : factories) {
    Filter* f = factory->create(ex);
    if (!f)
      continue;
    if (!chain) {
      chain = new FilterChain();
      chain->ex_ = &ex;
      chain->terminal_ = &terminal;
      chain->options_ = &options;
    }
    assert(chain->count_ < kMaxFilters && "the registry lists at most kMaxFilters filters");
    f->chain_ = chain;
    f->index_ = chain->count_;
    chain->filters_[chain->count_++] = f;
  }
  return chain;
}

FilterChain::~FilterChain() {
  for (size_t i = 0; i < count_; ++i)
    delete filters_[i];
}

void FilterChain::close() {
  if (closed_)
    return;
  closed_ = true;
  for (size_t i = kept_ ? kept_from_ : 0; i < count_; ++i) // those below heard it already
    filters_[i]->on_exchange_close();
}

bool FilterChain::keep_response() {
  // Only the upstream's own response, passing every filter: not a local reply, nor one a
  // filter makes or replaced.
  if (closed_ || answered_ || !response_begun_ || producing_ || drop_at_ != kNone ||
      response_top_ != count_)
    return false;
  size_t k = 0;
  while (k < count_ && !filters_[k]->keeps_response())
    ++k;
  if (k == count_ || (response_held_ && response_at_ >= k))
    return false;
  kept_ = true;
  kept_from_ = static_cast<uint8_t>(k);
  // What waited behind a head held below the keeper had passed it: it goes with the client.
  response_held_ = false;
  Queue dropped;
  dropped.take(response_queue_);
  for (size_t i = 0; i < k; ++i) // while the exchange is still there for them
    filters_[i]->on_exchange_close();
  ex_ = nullptr; // the client's exchange is going: a use of it now fails at once
  response_high_ = false;
  check_response_level();
  return true;
}

// ---- the request side ----

void FilterChain::request_head() {
  run_request_head(0);
}

void FilterChain::request_body(std::string_view data, bool end) {
  run_request_body(0, data, end);
  check_request_level();
}

void FilterChain::request_trailers(std::span<const http::Header> trailers) {
  run_request_trailers(0, trailers);
}

void FilterChain::run_request_head(size_t from) {
  http::RequestHead& req = ex_->mutable_request();
  for (size_t i = from; i < count_; ++i) {
    FilterStatus s = filters_[i]->on_request_head(req);
    if (done())
      return; // it answered, or the exchange is gone
    if (s == FilterStatus::STOP) {
      request_at_ = static_cast<uint8_t>(i);
      request_held_ = true;
      return;
    }
  }
  request_at_ = count_;
  terminal_->chain_request_head();
}

void FilterChain::run_request_body(size_t from, std::string_view data, bool end) {
  for (size_t i = from; i < count_; ++i) {
    if (done())
      return;
    if (request_held_ && i == request_at_) {
      queue_body(request_queue_, data, end);
      return;
    }
    if (filters_[i]->on_request_body(data, end) == FilterStatus::STOP)
      return; // taken: the filter passes it on
  }
  if (!done())
    terminal_->chain_request_body(data, end);
}

void FilterChain::run_request_trailers(size_t from, std::span<const http::Header> trailers) {
  for (size_t i = from; i < count_; ++i) {
    if (done())
      return;
    if (request_held_ && i == request_at_) {
      queue_trailers(request_queue_, trailers);
      return;
    }
    if (filters_[i]->on_request_trailers(trailers) == FilterStatus::STOP)
      return;
  }
  if (!done())
    terminal_->chain_request_trailers(trailers);
}

void FilterChain::continue_request(size_t i) {
  assert(request_held_ && request_at_ == i && "continue_request from the filter holding it");
  if (done() || !request_held_ || request_at_ != i)
    return;
  request_held_ = false;
  run_request_head(i + 1);
  replay_request(i);
}

void FilterChain::replay_request(size_t from) {
  Queue q;
  q.take(request_queue_);
  q.bytes.for_each_run([&](std::string_view run) { run_request_body(from, run, false); });
  if (q.has_trailers)
    run_request_trailers(from, q.trailers);
  else if (q.end)
    run_request_body(from, {}, true);
  check_request_level();
}

size_t FilterChain::request_held() const {
  size_t n = request_queue_.bytes.size();
  for (size_t i = 0; i < count_; ++i)
    n += filters_[i]->request_buffered();
  return n;
}

void FilterChain::check_request_level() {
  if (done())
    return;
  size_t held = request_held();
  if (!request_paused_ && held > kHigh) {
    request_paused_ = true;
    terminal_->chain_hold_request(true);
  } else if (request_paused_ && held < kLow) {
    request_paused_ = false;
    terminal_->chain_hold_request(false);
  }
}

// ---- the response side ----

void FilterChain::response_head(FilterResponseHead& head) {
  if (closed_)
    return;
  response_top_ = count_;
  response_begun_ = true;
  run_response_head(count_, head);
}

void FilterChain::response_body(std::string_view data, bool end) {
  if (drop_at_ != kNone) {
    // A filter answers in its place: the filters above it, which saw the upstream's head (it
    // enters at the top), see its body and its end too (a deadline stops), and it goes no
    // further.
    run_response_body(count_, data, end);
    return;
  }
  run_response_body(response_top_, data, end);
  check_response_level();
  if (kept_ && !closed_ && !filters_[kept_from_]->keeps_response())
    terminal_->chain_kept_over(); // given up (too large to keep): nothing wants the rest
}

void FilterChain::response_trailers(std::span<const http::Header> trailers) {
  run_response_trailers(drop_at_ != kNone ? count_ : response_top_, trailers);
}

void FilterChain::run_response_head(size_t below, FilterResponseHead& head) {
  for (size_t i = below; i-- > 0;) {
    FilterStatus s = filters_[i]->on_response_head(head);
    if (closed_)
      return;
    if (s == FilterStatus::STOP) {
      hold_response_head(i, head);
      return;
    }
  }
  send_head_to_client(head);
  if (kick_ && !closed_) {
    kick_ = false; // a replacing filter's body may start
    response_writable();
  }
}

void FilterChain::run_response_body(size_t below, std::string_view data, bool end) {
  for (size_t i = below; i-- > kept_from_;) {
    if (closed_)
      return;
    if (response_held_ && i == response_at_) {
      queue_body(response_queue_, data, end);
      return;
    }
    if (i == drop_at_)
      return; // a local reply's body, which this filter replaced
    if (filters_[i]->on_response_body(data, end) == FilterStatus::STOP)
      return;
  }
  if (closed_)
    return;
  if (!kept_)
    send_body_to_client(data, end);
  else if (end)
    terminal_->chain_kept_over(); // the kept response is whole
}

void FilterChain::run_response_trailers(size_t below, std::span<const http::Header> trailers) {
  for (size_t i = below; i-- > kept_from_;) {
    if (closed_)
      return;
    if (response_held_ && i == response_at_) {
      queue_trailers(response_queue_, trailers);
      return;
    }
    if (i == drop_at_)
      return;
    if (filters_[i]->on_response_trailers(trailers) == FilterStatus::STOP)
      return;
  }
  if (closed_)
    return;
  if (kept_)
    terminal_->chain_kept_over();
  else
    ex_->end_response_with_trailers(trailers); // may close the exchange
}

void FilterChain::hold_response_head(size_t at, const FilterResponseHead& head) {
  // The upstream's views go with its connection: copies live in the exchange's arena.
  held_fields_.clear();
  if (head.fields)
    for (const auto& f : *head.fields)
      held_fields_.push_back({ex_->arena().copy(f.name), ex_->arena().copy(f.value)});
  held_head_ = head;
  held_head_.fields = &held_fields_;
  held_head_.upstream_date = ex_->arena().copy(head.upstream_date);
  held_head_.date = ex_->arena().copy(head.date);
  response_at_ = static_cast<uint8_t>(at);
  response_held_ = true;
}

void FilterChain::continue_response(size_t i) {
  assert(response_held_ && response_at_ == i && "continue_response from the filter holding it");
  if (closed_ || !response_held_ || response_at_ != i)
    return;
  response_held_ = false;
  run_response_head(i, held_head_);
  replay_response(i + 1);
}

void FilterChain::replay_response(size_t below) {
  Queue q;
  q.take(response_queue_);
  // The holder (below - 1) sees them first now: they waited above it.
  q.bytes.for_each_run([&](std::string_view run) { run_response_body(below, run, false); });
  if (q.has_trailers)
    run_response_trailers(below, q.trailers);
  else if (q.end)
    run_response_body(below, {}, true);
  check_response_level();
}

void FilterChain::send_head_to_client(FilterResponseHead& head) {
  http::ResponseHead out;
  out.status = head.status;
  out.content_length = head.content_length;
  if (head.fields)
    out.more = *head.fields;
  out.date = head.date;
  if (head.tunnel)
    ex_->start_tunnel(out);
  else
    ex_->send_head(out);
}

void FilterChain::send_body_to_client(std::string_view data, bool end) {
  if (!data.empty() && !ex_->request().is_head())
    ex_->send_body(data);
  if (end)
    ex_->end_response(); // may close the exchange
}

size_t FilterChain::response_held() const {
  size_t n = response_queue_.bytes.size();
  for (size_t i = 0; i < count_; ++i)
    n += filters_[i]->response_buffered();
  return n;
}

void FilterChain::check_response_level() {
  if (closed_)
    return;
  size_t held = response_held();
  if (!response_high_ && held > kHigh) {
    response_high_ = true; // the terminal sees it after its call and stops reading
  } else if (response_high_ && held < kLow) {
    response_high_ = false;
    terminal_->chain_response_drained();
    response_writable();
  }
}

void FilterChain::response_writable() {
  if (!closed_ && producing_ && !response_blocked())
    filters_[response_top_]->on_response_writable();
}

// ---- local replies and failures ----

bool FilterChain::start_answer(size_t i, int status, const char* why) {
  if (closed_)
    return false;
  if (response_begun_) {
    fail(i, status, "answered after the response began"); // too late: a reset
    return false;
  }
  answered_ = true;
  terminal_->chain_answered(status, why);
  return !closed_;
}

void FilterChain::respond(size_t i, const LocalReply& reply, const char* why) {
  if (start_answer(i, reply.status, why))
    reply_from(i, reply, i + 1);
}

void FilterChain::respond_head(size_t i, FilterResponseHead& head) {
  if (!start_answer(i, head.status, nullptr))
    return;
  head.source = ResponseSource::LOCAL;
  response_top_ = static_cast<uint8_t>(i);
  response_begun_ = true;
  producing_ = true;
  run_response_head(i, head);
}

void FilterChain::replace_response(size_t i) {
  assert(!response_held_ && response_top_ > i && "replace_response from on_response_head");
  drop_at_ = static_cast<uint8_t>(i);
  response_top_ = static_cast<uint8_t>(i);
  producing_ = true;
  kick_ = true;
}

bool FilterChain::send_response_file(size_t i, int fd, int64_t offset, int64_t length) {
  if (closed_ || response_held_ || !producing_ || response_top_ != i)
    return false;
  for (size_t j = 0; j < i; ++j)
    if (filters_[j]->reads_response_body())
      return false;
  return ex_->send_file(fd, offset, length);
}

void FilterChain::fail(size_t i, int status, const char* why) {
  if (closed_)
    return;
  if (kept_) {
    terminal_->chain_kept_over(); // no client to tell: the kept response ends here
    return;
  }
  if (response_begun_) {
    answered_ = true;
    terminal_->chain_answered(0, why);
    if (!closed_)
      ex_->abort(); // the client must see a cut response, never a clean short one
    return;
  }
  // In the exchange's arena: the reply may be written after this returns.
  std::string_view body = ex_->arena().copy(http::ReasonBody(status).view());
  respond(i, LocalReply{status, "text/plain", body, {}}, why);
}

void FilterChain::reply_from(size_t below, LocalReply reply, size_t shapers) {
  answered_ = true;
  for (size_t i = shapers; i-- > 0;)
    filters_[i]->on_local_reply(reply);
  thread_local std::vector<http::Header> fields;
  fields.clear();
  if (!reply.content_type.empty())
    fields.push_back({"content-type", reply.content_type});
  fields.insert(fields.end(), reply.fields.begin(), reply.fields.end());
  FilterResponseHead head{reply.status, static_cast<int64_t>(reply.body.size()), &fields,
                          ResponseSource::LOCAL, false};
  response_top_ = static_cast<uint8_t>(below);
  response_begun_ = true;
  run_response_head(below, head);
  if (!closed_)
    run_response_body(below, reply.body, true);
}

void FilterChain::queue_body(Queue& q, std::string_view data, bool end) {
  q.bytes.append(data);
  q.end |= end;
}

void FilterChain::queue_trailers(Queue& q, std::span<const http::Header> trailers) {
  for (const auto& t : trailers)
    q.trailers.push_back({ex_->arena().copy(t.name), ex_->arena().copy(t.value)});
  q.has_trailers = true;
  q.end = true;
}

} // namespace portico::routing
