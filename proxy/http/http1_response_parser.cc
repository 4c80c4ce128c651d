#include "http/http1_response_parser.h"

#include <algorithm>
#include <charconv>
#include <limits>

namespace portico::http {

namespace {

Http1ResponseParser* self(llhttp_t* p) {
  return static_cast<Http1ResponseParser*>(p->data);
}

} // namespace

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

namespace {

// What the Connection field says of reuse; whether the framing allows it is decided apart.
// llhttp_should_keep_alive() would mix the two, and before on_headers_complete returns it does
// not know yet that a HEAD response has no body.
bool connection_persists(const llhttp_t& p) {
  if (p.http_minor >= 1)
    return (p.flags & F_CONNECTION_CLOSE) == 0;
  return (p.flags & F_CONNECTION_KEEP_ALIVE) != 0;
}

} // namespace

const llhttp_settings_t* Http1ResponseParser::settings() {
  static const llhttp_settings_t s = [] {
    llhttp_settings_t t;
    llhttp_settings_init(&t);
    t.on_message_begin = on_message_begin;
    t.on_status_complete = on_status_complete;
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
  start(false);
}

void Http1ResponseParser::start(bool head_request, bool upgrade) {
  llhttp_reset(&parser_);
  scanner_.start_head(max_header_bytes_);
  head_request_ = head_request;
  upgrade_ = upgrade;
  upgraded_ = false;
  interim_bytes_ = 0;
  field_ = value_ = {};
  fast_left_ = -1;
  interim_ = in_trailers_ = done_ = started_ = failed_ = false;
  reason_ = "";
}

int Http1ResponseParser::fail(const char* reason) {
  // The first fault is the one to report: llhttp's own error follows a callback's.
  if (!failed_) {
    failed_ = true;
    reason_ = reason;
  }
  return HPE_USER;
}

int Http1ResponseParser::scan_rest() {
  scan_pos_ += scanner_.scan(scan_pos_, static_cast<size_t>(buf_end_ - scan_pos_));
  return scanner_.failed() ? fail(scanner_.reason()) : 0;
}

std::string_view Http1ResponseParser::take(std::string_view last, std::string_view more) {
  if (!last.empty())
    return arena_.append(last, more);
  views_in_buffer_ = true;
  return more;
}

void Http1ResponseParser::pin_views(const char* data, size_t len) {
  views_in_buffer_ = false;
  auto in_buffer = [&](std::string_view v) {
    return !v.empty() && v.data() >= data && v.data() < data + len;
  };
  auto pin = [&](std::string_view& v) {
    if (in_buffer(v))
      v = arena_.copy(v);
  };
  for (auto& f : head_.headers) {
    pin(f.name);
    pin(f.value);
  }
  pin(field_);
  pin(value_);
}

size_t Http1ResponseParser::feed(const char* data, size_t len) {
  size_t n = parse(data, len);
  // Fields point into the caller's buffer, which is reused after this returns: a head that
  // is not complete yet keeps copies instead.
  if (views_in_buffer_)
    pin_views(data, len);
  return n;
}

size_t Http1ResponseParser::parse(const char* data, size_t len) {
  if (failed_ || done_ || len == 0)
    return 0;
  if (fast_left_ >= 0)
    return fast_body(data, len);
  bool first = !started_;
  started_ = true;
  buf_end_ = data + len;
  scan_pos_ = data;
  if (scanner_.scanning()) {
    scan_pos_ += scanner_.scan(data, len);
    if (scanner_.failed()) {
      fail(scanner_.reason());
      return 0;
    }
  }
  if (first && scanner_.done())
    if (long n = fast_head(data, len, static_cast<size_t>(scan_pos_ - data)); n >= 0)
      return static_cast<size_t>(n);
  llhttp_errno_t rc = llhttp_execute(&parser_, data, len);
  if (rc == HPE_OK) {
    // A section the scanner saw end in this buffer must have ended for llhttp too (and the
    // response's end pauses it): otherwise the two read the bytes differently.
    if (scanner_.done()) {
      fail("ambiguous response framing");
      return static_cast<size_t>(scan_pos_ - data);
    }
    return len;
  }
  size_t consumed = static_cast<size_t>(llhttp_get_error_pos(&parser_) - data);
  if (rc == HPE_PAUSED && done_)
    return consumed;
  // Anything else, HPE_PAUSED_UPGRADE included (no 101 gets this far), is a fault.
  fail(llhttp_get_error_reason(&parser_));
  return consumed;
}

bool Http1ResponseParser::finish() {
  if (done_)
    return true;
  if (failed_)
    return false;
  // No buffer: nothing llhttp_finish() calls back may scan.
  scan_pos_ = buf_end_ = nullptr;
  llhttp_errno_t rc = started_ ? llhttp_finish(&parser_) : HPE_OK;
  if ((rc == HPE_OK || rc == HPE_PAUSED) && done_)
    return true;
  fail("upstream closed before the response ended");
  return false;
}

int Http1ResponseParser::on_message_begin(llhttp_t* p) {
  auto* s = self(p);
  s->head_.clear();
  s->field_ = s->value_ = {};
  s->interim_ = s->in_trailers_ = false;
  return 0;
}

int Http1ResponseParser::on_status_complete(llhttp_t* p) {
  auto* s = self(p);
  // The scanner has held the code to three digits, the first not 0.
  int status = p->status_code;
  // 101 switches protocols: only where the request asked for it.
  if (status == 101 && !s->upgrade_)
    return s->fail("unexpected 101 from upstream");
  s->interim_ = status < 200 && status != 101;
  return 0;
}

int Http1ResponseParser::on_header_field(llhttp_t* p, const char* at, size_t len) {
  auto* s = self(p);
  if (!s->interim_) // an interim response's fields are checked by the scanner, then dropped
    s->field_ = s->take(s->field_, {at, len});
  return 0;
}

int Http1ResponseParser::on_header_value(llhttp_t* p, const char* at, size_t len) {
  auto* s = self(p);
  if (!s->interim_)
    s->value_ = s->take(s->value_, {at, len});
  return 0;
}

int Http1ResponseParser::on_header_value_complete(llhttp_t* p) {
  return self(p)->finish_field();
}

int Http1ResponseParser::finish_field() {
  if (interim_)
    return 0;
  // The scanner refuses ": v" before llhttp (which takes it) reads it; this stays the backstop.
  if (field_.empty())
    return fail("empty header field name");
  // Names are compared and sent lower-case; the input buffer is not ours to write, so a name
  // with a capital is copied (lowered) into the arena.
  if (std::any_of(field_.begin(), field_.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) {
    char* name = arena_.allocate(field_.size());
    for (size_t i = 0; i < field_.size(); ++i)
      name[i] = ascii_lower(field_[i]);
    field_ = {name, field_.size()};
  }
  // llhttp drops the leading whitespace of a value, not the trailing. The scanner has refused
  // control bytes in values.
  std::string_view v = value_;
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t'))
    v.remove_suffix(1);
  if (in_trailers_)
    sink_.on_response_trailer(field_, v);
  else
    head_.headers.push_back({field_, v});
  field_ = value_ = {};
  return 0;
}

int Http1ResponseParser::on_headers_complete(llhttp_t* p) {
  auto* s = self(p);
  // llhttp and the scanner must agree on where the head ends (the scanner saw this buffer
  // first, so it has reached the end already if they do).
  if (!s->scanner_.done())
    return s->fail("ambiguous response head");
  if (s->interim_ != (p->status_code < 200 && p->status_code != 101)) // on_status_complete's
    return s->fail("ambiguous status line");
  if (s->interim_)
    return s->end_interim_head();
  auto& h = s->head_;
  h.status = p->status_code;
  h.minor_version = p->http_minor;
  bool no_body = s->head_request_ || h.status == 204 || h.status == 304 || h.status == 101;
  s->upgraded_ = h.status == 101;
  if (s->check_framing(no_body) != 0)
    return HPE_USER;
  for (const auto& f : h.headers)
    if (f.name == "keep-alive")
      h.keepalive_timeout = parse_keepalive_timeout(f.value);
  s->in_trailers_ = true; // any later fields are trailers
  if (h.chunked && !no_body) {
    // The body starts where the head ended, in this very buffer: check the framing of what
    // has arrived before the head is handed on, so that a fault found here is still a 502.
    s->scanner_.start_chunked(s->max_header_bytes_);
    if (s->scan_rest() != 0)
      return HPE_USER;
  } else {
    // A body of known length is counted by llhttp; a close-delimited one has no framing.
    s->scanner_.stop();
  }
  s->sink_.on_response_head(h);
  // The head has been handed on: its views into the buffer are no longer read.
  h.headers.clear();
  s->views_in_buffer_ = false;
  return no_body ? 1 : 0; // 1: llhttp reads no body, whatever the fields said
}

// A 1xx has no body whatever its fields say (RFC 9112 6.3), and the final response follows on
// the same connection: anything that suggests otherwise means the backend and we disagree on
// where the next response starts.
int Http1ResponseParser::end_interim_head() {
  // Each head is bounded by the scanner; this bounds how many of them a backend may send.
  interim_bytes_ += scanner_.section_bytes();
  if (interim_bytes_ > max_header_bytes_)
    return fail("too many interim responses");
  if (parser_.flags & (F_CONTENT_LENGTH | F_TRANSFER_ENCODING))
    return fail("Content-Length or Transfer-Encoding in an interim response");
  if (!connection_persists(parser_))
    return fail("interim response closes the connection");
  scanner_.stop(); // the next head is started when llhttp ends this message
  return 1;
}

// Content-Length and Transfer-Encoding decide where the response ends, so every way two
// readers could disagree on them is refused (RFC 9112 6.3), and keep_alive is decided here.
int Http1ResponseParser::check_framing(bool no_body) {
  auto& h = head_;
  int cl_fields = 0, te_fields = 0;
  bool te_chunked = true; // every Transfer-Encoding field is exactly "chunked"
  for (const auto& f : h.headers) {
    if (f.name == "content-length") {
      ++cl_fields;
    } else if (f.name == "transfer-encoding") {
      ++te_fields;
      te_chunked = te_chunked && iequals(f.value, "chunked");
    }
  }
  // llhttp refuses repeated or malformed Content-Length and Content-Length with
  // Transfer-Encoding already; these checks keep the rules from resting on its lenient flags,
  // and make sure both read the same fields.
  if (cl_fields > 1)
    return fail("repeated Content-Length");
  if (cl_fields > 0 && te_fields > 0)
    return fail("Content-Length with Transfer-Encoding");
  if ((cl_fields > 0) != ((parser_.flags & F_CONTENT_LENGTH) != 0) ||
      (te_fields > 0) != ((parser_.flags & F_TRANSFER_ENCODING) != 0))
    return fail("ambiguous response framing fields");
  // An HTTP/1.0 message with Transfer-Encoding has faulty framing (RFC 9112 6.1).
  if (te_fields > 0 && h.minor_version == 0)
    return fail("Transfer-Encoding in an HTTP/1.0 response");
  if (parser_.flags & F_CONTENT_LENGTH) {
    // llhttp takes up to 2^64-1: one over INT64_MAX would turn into "length unknown" here.
    if (parser_.content_length > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return fail("Content-Length out of range");
    h.content_length = static_cast<int64_t>(parser_.content_length);
  }
  h.chunked = (parser_.flags & F_CHUNKED) != 0;
  bool persists = connection_persists(parser_);
  if (no_body) {
    // The fields describe the body a GET would have had (HEAD, 304), or nothing (204): they
    // frame nothing, so any transfer coding is fine. But a 204 that announces a body breaks a
    // MUST NOT (RFC 9110 8.6, RFC 9112 6.1), and its backend may send that body next, where
    // the next response would be read: the connection is not reused.
    h.body_announced = te_fields > 0 || h.content_length > 0;
    h.keep_alive = persists && !(h.status == 204 && h.body_announced);
    return 0;
  }
  // A response whose final coding is not chunked is read until the connection closes (RFC 9112
  // 6.3 rule 4), but its content would reach the client still coded, the Transfer-Encoding
  // that names the coding dropped as hop-by-hop: corrupt. Only "chunked" alone is accepted,
  // in one field ("chunked" twice would be chunked applied twice, forbidden by 7.1).
  if (te_fields > 0 && (te_fields > 1 || !te_chunked))
    return fail("unsupported transfer coding in response");
  if ((te_fields > 0) != h.chunked)
    return fail("ambiguous Transfer-Encoding");
  // Without a length the body is close-delimited: the connection is spent.
  h.keep_alive = persists && (h.chunked || h.content_length >= 0);
  return 0;
}

int Http1ResponseParser::on_body(llhttp_t* p, const char* at, size_t len) {
  self(p)->sink_.on_response_body({at, len});
  return 0;
}

int Http1ResponseParser::on_message_complete(llhttp_t* p) {
  auto* s = self(p);
  if (s->interim_) {
    // A 1xx ended where its head did: the next head follows in this very buffer, maybe, and
    // llhttp reads on into it, so the scanner goes first.
    s->interim_ = false;
    s->scanner_.start_head(s->max_header_bytes_);
    return s->scan_rest();
  }
  // A chunked body the scanner is still in has ended early for llhttp.
  if (s->scanner_.scanning())
    return s->fail("ambiguous chunked framing");
  s->scanner_.stop();
  s->done_ = true;
  s->sink_.on_response_end();
  return HPE_PAUSED;
}

} // namespace portico::http
