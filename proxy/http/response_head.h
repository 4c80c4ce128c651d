#pragma once
// A response's status and header fields, built on the stack by a handler: a fixed array, so a
// response costs no allocation. Date, Server and framing headers are added by the session.
#include "http/header.h"

#include <array>
#include <cstdint>
#include <span>

namespace portico::http {

struct ResponseHead {
  static constexpr size_t kMaxHeaders = 24;

  int status = 200;
  int64_t content_length = -1; // -1: unknown, the body is streamed (chunked on HTTP/1.1)
  // The Date field to send (a stored response keeps the one its origin gave it); empty: now.
  std::string_view date;
  std::array<Header, kMaxHeaders> headers;
  size_t header_count = 0;
  // Fields after those, as many as there are: an upstream's response head passed on (apps send
  // 30 and more). The span must stay valid until send_head returns; sessions copy it there.
  std::span<const Header> more;

  // Names must be lower case; values must stay valid until the head is sent.
  void add(std::string_view name, std::string_view value) {
    if (header_count < kMaxHeaders)
      headers[header_count++] = {name, value};
  }
  template <typename F> void for_each(F&& f) const {
    for (size_t i = 0; i < header_count; ++i)
      f(headers[i]);
    for (const Header& h : more)
      f(h);
  }
  size_t size() const { return header_count + more.size(); }
};

// "OK" for 200 and so on; "" for codes without a registered phrase.
std::string_view reason_phrase(int status);

// The reason phrase and a newline, in a buffer of its own: the body of a plain-text answer
// that says no more than its status.
class ReasonBody {
public:
  explicit ReasonBody(int status);
  std::string_view view() const { return {buf_, len_}; }

private:
  char buf_[64]; // the longest phrase is 31 bytes
  size_t len_;
};

// Statuses whose responses never carry a body (RFC 9110 6.4.1).
inline bool status_has_no_body(int status) {
  return (status >= 100 && status < 200) || status == 204 || status == 304;
}

} // namespace portico::http
