#include "bytes_app.h"

#include <charconv>
#include <string>

namespace portico::backend {

namespace {
// 64 KiB of "0123456789abcdef..." built once.
std::string_view pattern() {
  static const std::string p = [] {
    std::string s(64 * 1024, '\0');
    for (size_t i = 0; i < s.size(); ++i)
      s[i] = "0123456789abcdef"[i % 16];
    return s;
  }();
  return p;
}
} // namespace

int BytesApp::start(server::Exchange& ex, std::string_view n_text, std::string_view max_age) {
  int64_t n = 0;
  auto r = std::from_chars(n_text.data(), n_text.data() + n_text.size(), n);
  if (r.ec != std::errc() || r.ptr != n_text.data() + n_text.size() || n < 0 || n > kMaxBytes) {
    ex.respond(400, "text/plain", "n must be 0..2^40\n");
    return 400;
  }
  for (char c : max_age)
    if (c < '0' || c > '9' || max_age.size() > 10) {
      ex.respond(400, "text/plain", "max_age must be 0..9999999999\n");
      return 400;
    }
  http::ResponseHead head;
  head.content_length = n;
  head.add("content-type", "application/octet-stream");
  char cc[40];
  if (!max_age.empty()) {
    std::string_view prefix = "public, max-age=";
    std::copy(prefix.begin(), prefix.end(), cc);
    std::copy(max_age.begin(), max_age.end(), cc + prefix.size());
    head.add("cache-control", {cc, prefix.size() + max_age.size()});
  }
  ex.send_head(head);
  if (n == 0 || ex.request().is_head()) {
    ex.end_response();
    return 200;
  }
  auto* app = new BytesApp(n);
  ex.set_listener(app);
  app->produce(ex); // may close the exchange
  return 200;
}

void BytesApp::produce(server::Exchange& ex) {
  std::string_view p = pattern();
  while (left_ > 0 && !ex.above_high_watermark()) {
    size_t k = static_cast<size_t>(std::min<int64_t>(left_, static_cast<int64_t>(p.size())));
    ex.send_body(p.substr(0, k));
    left_ -= static_cast<int64_t>(k);
  }
  if (left_ == 0)
    ex.end_response(); // may close the exchange
}

} // namespace portico::backend
