// H2RequestRules against nghttp2's own HTTP messaging, on any request the input describes:
// a differential target, as http1_response_parser_fuzz is for the fast response head. The
// input: a byte of flags, then records of a kind byte and, for a field, a length-prefixed name
// and value (kind 0: a header field, 1: a DATA frame of (length byte % 16) bytes, 2: a trailer
// field). A verdict of one that the other does not share aborts.
#include "../unit/http/h2_request_reference.h"

#include <cstdio>

using namespace portico::http::h2_reference;

namespace {

struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  bool byte(uint8_t& b) {
    if (p == end)
      return false;
    b = *p++;
    return true;
  }
  bool text(std::string& s) {
    uint8_t n;
    if (!byte(n) || static_cast<size_t>(end - p) < n)
      return false;
    s.assign(reinterpret_cast<const char*>(p), n);
    p += n;
    return true;
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in{data, data + size};
  uint8_t flags;
  if (!in.byte(flags))
    return 0;
  Shape s;
  s.fields.clear();
  s.connect_protocol = flags & 1;
  s.end_on_headers = flags & 2;
  s.end_on_data = flags & 4;
  s.trailers_end_stream = !(flags & 8);
  for (uint8_t kind; s.fields.size() + s.trailers.size() + s.data.size() < 64 && in.byte(kind);) {
    std::string name, value;
    uint8_t len;
    switch (kind % 3) {
    case 0:
      if (!in.text(name) || !in.text(value))
        break;
      s.fields.push_back({name, value});
      continue;
    case 1:
      if (!in.byte(len))
        break;
      s.data.push_back(len % 16);
      continue;
    default:
      if (!in.text(name) || !in.text(value))
        break;
      s.trailers.push_back({name, value});
      s.has_trailers = true;
      continue;
    }
    break;
  }
  // What the frames can say: a stream ended on its HEADERS carries nothing after them, and
  // trailers come only after content that did not end the stream.
  if (s.end_on_headers) {
    s.data.clear();
    s.trailers.clear();
    s.has_trailers = false;
  }
  if (s.data.empty())
    s.end_on_data = false;
  if (s.end_on_data) {
    s.trailers.clear();
    s.has_trailers = false;
  }
  Nghttp2Reference ref;
  if (ref.accepts(s) != rules_accept(s)) {
    std::fprintf(stderr, "H2RequestRules and nghttp2 disagree (nghttp2 %s):\n%s",
                 ref.accepts(s) ? "accepts" : "refuses", describe(s).c_str());
    std::abort();
  }
  return 0;
}
