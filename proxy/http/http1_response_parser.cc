#include "http/http1_response_parser.h"

#include <charconv>

namespace portico::http {

namespace {
Http1ResponseParser* self(llhttp_t* p) { return static_cast<Http1ResponseParser*>(p->data); }

double parse_keepalive_timeout(std::string_view v) {
  // "timeout=5, max=100"
  auto pos = v.find("timeout=");
  if (pos == std::string_view::npos)
    return 0;
  v.remove_prefix(pos + 8);
  long n = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), n);
  return r.ec == std::errc() && n > 0 ? static_cast<double>(n) : 0;
}
} // namespace

const llhttp_settings_t* Http1ResponseParser::settings() {
  static const llhttp_settings_t s = [] {
    llhttp_settings_t t;
    llhttp_settings_init(&t);
    t.on_message_begin = on_message_begin;
    t.on_header_field = on_header_field;
    t.on_header_value = on_header_value;
    t.on_header_value_complete = on_header_value_complete;
    t.on_headers_complete = on_headers_complete;
    t.on_body = on_body;
    t.on_message_complete = on_message_complete;
    return t;
  }();
  return &s;
}

Http1ResponseParser::Http1ResponseParser(Sink& sink, UpstreamResponseHead& head, Arena& arena,
                                         size_t max_header_bytes)
    : sink_(sink), head_(head), arena_(arena), max_header_bytes_(max_header_bytes) {
  llhttp_init(&parser_, HTTP_RESPONSE, settings());
  parser_.data = this;
}

void Http1ResponseParser::start(bool head_request) {
  llhttp_reset(&parser_);
  head_request_ = head_request;
  interim_ = in_trailers_ = done_ = started_ = failed_ = false;
  reason_ = "";
}

size_t Http1ResponseParser::feed(const char* data, size_t len) {
  if (failed_ || done_ || len == 0)
    return 0;
  started_ = true;
  llhttp_errno_t rc = llhttp_execute(&parser_, data, len);
  if (rc == HPE_OK)
    return len;
  size_t consumed = static_cast<size_t>(llhttp_get_error_pos(&parser_) - data);
  if (rc == HPE_PAUSED || rc == HPE_PAUSED_UPGRADE)
    return consumed;
  failed_ = true;
  if (rc != HPE_USER)
    reason_ = llhttp_get_error_reason(&parser_);
  return consumed;
}

bool Http1ResponseParser::finish() {
  if (done_)
    return true;
  if (failed_ || !started_)
    return false;
  llhttp_errno_t rc = llhttp_finish(&parser_);
  return (rc == HPE_OK || rc == HPE_PAUSED) && done_;
}

int Http1ResponseParser::on_message_begin(llhttp_t* p) {
  auto* s = self(p);
  s->head_.clear();
  s->field_ = s->value_ = {};
  s->header_bytes_ = 0;
  s->in_trailers_ = false;
  return 0;
}

int Http1ResponseParser::finish_field() {
  if (field_.empty())
    return 0;
  char* name = const_cast<char*>(field_.data());
  for (size_t i = 0; i < field_.size(); ++i)
    name[i] = ascii_lower(name[i]);
  std::string_view v = value_;
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t'))
    v.remove_suffix(1);
  for (unsigned char c : v)
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      failed_ = true;
      reason_ = "control character in a response header";
      return HPE_USER;
    }
  if (in_trailers_)
    sink_.on_response_trailer(field_, v);
  else if (!interim_)
    head_.headers.push_back({field_, v});
  field_ = value_ = {};
  return 0;
}

int Http1ResponseParser::on_header_field(llhttp_t* p, const char* at, size_t len) {
  auto* s = self(p);
  s->header_bytes_ += len;
  if (s->header_bytes_ > s->max_header_bytes_) {
    s->failed_ = true;
    s->reason_ = "response header section too large";
    return HPE_USER;
  }
  s->field_ = s->arena_.append(s->field_, {at, len});
  return 0;
}

int Http1ResponseParser::on_header_value(llhttp_t* p, const char* at, size_t len) {
  auto* s = self(p);
  s->header_bytes_ += len;
  if (s->header_bytes_ > s->max_header_bytes_) {
    s->failed_ = true;
    s->reason_ = "response header section too large";
    return HPE_USER;
  }
  s->value_ = s->arena_.append(s->value_, {at, len});
  return 0;
}

int Http1ResponseParser::on_header_value_complete(llhttp_t* p) { return self(p)->finish_field(); }

int Http1ResponseParser::on_headers_complete(llhttp_t* p) {
  auto* s = self(p);
  if (s->in_trailers_)
    return 0;
  int status = p->status_code;
  if (status >= 100 && status < 200) {
    // 101 would switch protocols; nothing here asks for that, so it is a protocol error.
    if (status == 101) {
      s->failed_ = true;
      s->reason_ = "unexpected 101 from upstream";
      return HPE_USER;
    }
    s->interim_ = true;
    return 0;
  }
  s->interim_ = false;
  auto& h = s->head_;
  h.status = status;
  h.minor_version = p->http_minor;
  h.keep_alive = llhttp_should_keep_alive(p);
  if (p->flags & F_CONTENT_LENGTH)
    h.content_length = static_cast<int64_t>(p->content_length);
  h.chunked = (p->flags & F_CHUNKED) != 0;
  for (const auto& f : h.headers)
    if (f.name == "keep-alive")
      h.keepalive_timeout = parse_keepalive_timeout(f.value);
  bool no_body = s->head_request_ || status == 204 || status == 304;
  s->sink_.on_response_head(h);
  s->in_trailers_ = true; // any later header callbacks are trailers
  return no_body ? 1 : 0;
}

int Http1ResponseParser::on_body(llhttp_t* p, const char* at, size_t len) {
  self(p)->sink_.on_response_body({at, len});
  return 0;
}

int Http1ResponseParser::on_message_complete(llhttp_t* p) {
  auto* s = self(p);
  if (s->interim_) {
    s->interim_ = false;
    return 0; // a 1xx: the real response follows on the same connection
  }
  s->done_ = true;
  s->sink_.on_response_end();
  return HPE_PAUSED;
}

} // namespace portico::http
