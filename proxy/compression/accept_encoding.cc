#include "compression/accept_encoding.h"

#include <algorithm>

namespace portico::compression {

namespace {

// What the client said of each coding, in thousandths; -1 where it said nothing.
struct Weights {
  int coding[kEncodingCount] = {-1, -1, -1};
  int star = -1;
  int identity = -1;

  void element(std::string_view e) {
    size_t semi = e.find(';');
    std::string_view name = http::trim_ows(e.substr(0, semi));
    if (name.empty())
      return;
    int w = 1000;
    while (semi != std::string_view::npos) {
      e.remove_prefix(semi + 1);
      semi = e.find(';');
      std::string_view param = http::trim_ows(e.substr(0, semi));
      if (param.size() >= 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=')
        w = std::max(parse_qvalue(param.substr(2)), 0); // a weight that is none refuses
    }
    if (name == "*")
      star = std::max(star, w);
    else if (http::iequals(name, "identity"))
      identity = std::max(identity, w);
    else if (auto c = encoding_named(name))
      coding[static_cast<size_t>(*c)] = std::max(coding[static_cast<size_t>(*c)], w);
  }
};

} // namespace

int parse_qvalue(std::string_view t) {
  if (t.empty() || (t[0] != '0' && t[0] != '1'))
    return -1;
  int whole = t[0] - '0';
  if (t.size() == 1)
    return whole * 1000;
  if (t[1] != '.' || t.size() > 5)
    return -1;
  int frac = 0, scale = 100;
  for (size_t i = 2; i < t.size(); ++i, scale /= 10) {
    if (t[i] < '0' || t[i] > '9')
      return -1;
    frac += (t[i] - '0') * scale;
  }
  if (whole == 1 && frac != 0)
    return -1;
  return whole * 1000 + frac;
}

std::optional<Encoding> negotiate(std::span<const http::Header> fields,
                                  std::span<const Encoding> offered) {
  Weights w;
  bool asked = false;
  for (const auto& f : fields) {
    if (f.name != "accept-encoding")
      continue;
    asked = true;
    std::string_view v = f.value;
    for (size_t comma; !v.empty(); v.remove_prefix(comma + 1)) {
      comma = v.find(',');
      w.element(v.substr(0, comma));
      if (comma == std::string_view::npos)
        break;
    }
  }
  if (!asked)
    return std::nullopt;
  std::optional<Encoding> best;
  int best_weight = 0;
  for (Encoding e : offered) {
    int q = w.coding[static_cast<size_t>(e)];
    if (q < 0)
      q = std::max(w.star, 0);
    if (q > best_weight) {
      best = e;
      best_weight = q;
    }
  }
  if (best && w.identity > best_weight)
    return std::nullopt; // the client would rather have it as it is
  return best;
}

} // namespace portico::compression
