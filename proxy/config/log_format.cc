#include "config/log_format.h"

#include <algorithm>

namespace portico::config {

namespace {

struct Named {
  std::string_view name;
  LogField field;
};

constexpr Named kFields[] = {
    {"time", LogField::TIME},         {"time_iso", LogField::TIME_ISO},
    {"client", LogField::CLIENT},     {"protocol", LogField::PROTOCOL},
    {"method", LogField::METHOD},     {"host", LogField::HOST},
    {"path", LogField::PATH},         {"upstream_path", LogField::UPSTREAM_PATH},
    {"request", LogField::REQUEST},   {"status", LogField::STATUS},
    {"bytes_in", LogField::BYTES_IN}, {"bytes_out", LogField::BYTES_OUT},
    {"queue", LogField::QUEUE},       {"connect", LogField::CONNECT},
    {"ttfb", LogField::TTFB},         {"total", LogField::TOTAL},
    {"upstream", LogField::UPSTREAM}, {"retries", LogField::RETRIES},
    {"route", LogField::ROUTE},       {"user_agent", LogField::USER_AGENT},
    {"referer", LogField::REFERER},   {"cache_status", LogField::CACHE_STATUS},
    {"limit", LogField::LIMIT},
};

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

} // namespace

std::string_view log_field_names() {
  // From the table the parser reads, so that the list an error gives is never out of date.
  static const std::string names = [] {
    std::string out;
    for (const Named& n : kFields)
      out.append(n.name).append(", ");
    return out + "http_NAME";
  }();
  return names;
}

core::expected<std::vector<LogPiece>, std::string> parse_log_format(std::string_view text) {
  std::vector<LogPiece> out;
  LogPiece piece;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c != '$') {
      piece.literal.push_back(c);
      ++i;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '$') {
      piece.literal.push_back('$');
      i += 2;
      continue;
    }
    size_t at = i++;
    bool braced = i < text.size() && text[i] == '{';
    if (braced)
      ++i;
    size_t start = i;
    while (i < text.size() && name_char(text[i]))
      ++i;
    std::string_view name = text.substr(start, i - start);
    if (braced) {
      if (i >= text.size() || text[i] != '}')
        return core::unexpected("'${' at offset " + std::to_string(at) + " has no closing '}'");
      ++i;
    }
    auto known = std::find_if(std::begin(kFields), std::end(kFields),
                              [&](const Named& n) { return n.name == name; });
    if (known != std::end(kFields)) {
      piece.field = known->field;
    } else if (name.size() > 5 && name.substr(0, 5) == "http_") {
      piece.field = LogField::REQUEST_FIELD;
      piece.field_name = name.substr(5);
      std::replace(piece.field_name.begin(), piece.field_name.end(), '_', '-');
    } else {
      return core::unexpected("unknown field '$" + std::string(name) + "' at offset " +
                              std::to_string(at) +
                              " (the fields: " + std::string(log_field_names()) + ")");
    }
    out.push_back(std::move(piece));
    piece = {};
  }
  if (!piece.literal.empty())
    out.push_back(std::move(piece));
  return out;
}

} // namespace portico::config
