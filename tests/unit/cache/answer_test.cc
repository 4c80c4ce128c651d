#include "cache/answer.h"

#include <gtest/gtest.h>

namespace portico::cache {
namespace {

std::shared_ptr<StoredResponse> stored() {
  std::vector<http::Header> fields{{"content-type", "text/plain"},
                                   {"etag", "W/\"v1\""},
                                   {"last-modified", "Sun, 06 Nov 1994 08:49:37 GMT"},
                                   {"cache-control", "max-age=60"}};
  auto r = make_stored(200, fields, CacheControl{}, "Sun, 06 Nov 1994 08:50:00 GMT");
  r->fresh.response_time = 1000;
  r->fresh.initial_age = 5;
  r->body = std::make_shared<StoredBody>();
  r->body->append("0123456789");
  r->body->finish(true);
  r->length = 10;
  return r;
}

struct Out {
  Answer a;
  std::vector<http::Header> fields;
  char age[24];
  char range[server::kContentRangeMax];
  std::string_view field(std::string_view name) const {
    for (const auto& f : fields)
      if (f.name == name)
        return f.value;
    return {};
  }
};

Out answer(std::vector<http::Header> req_fields, std::string_view method = "GET") {
  static auto r = stored();
  http::RequestHead req;
  req.method = method;
  req.headers = std::move(req_fields);
  Out o;
  o.a = answer_from(*r, req, 1010, "Portico; hit", o.fields, o.age, o.range);
  return o;
}

TEST(Answer, TheStoredResponseWithItsAgeAndStatus) {
  auto o = answer({});
  EXPECT_EQ(o.a.status, 200);
  EXPECT_EQ(o.a.content_length, 10);
  EXPECT_EQ(o.field("age"), "15");
  EXPECT_EQ(o.field("cache-status"), "Portico; hit");
  EXPECT_EQ(o.a.date, "Sun, 06 Nov 1994 08:50:00 GMT");
}

TEST(Answer, TheClientsOwnConditionsGetA304) {
  EXPECT_EQ(answer({{"if-none-match", "\"v1\""}}).a.status, 304); // weak comparison
  EXPECT_EQ(answer({{"if-none-match", "\"v2\""}}).a.status, 200);
  EXPECT_EQ(answer({{"if-modified-since", "Sun, 06 Nov 1994 08:49:37 GMT"}}).a.status, 304);
  EXPECT_EQ(answer({{"if-modified-since", "Sun, 06 Nov 1994 08:49:36 GMT"}}).a.status, 200);
  // If-None-Match decides when both are there
  EXPECT_EQ(
      answer({{"if-none-match", "\"v2\""}, {"if-modified-since", "Sun, 06 Nov 1994 08:49:37 GMT"}})
          .a.status,
      200);
  auto o = answer({{"if-none-match", "*"}});
  EXPECT_EQ(o.a.status, 304);
  EXPECT_EQ(o.field("content-type"), ""); // a 304 carries the validators and freshness only
  EXPECT_EQ(o.field("etag"), "W/\"v1\"");
}

TEST(Answer, RangesOfAComplete200) {
  auto o = answer({{"range", "bytes=2-4"}});
  EXPECT_EQ(o.a.status, 206);
  EXPECT_EQ(o.a.offset, 2);
  EXPECT_EQ(o.a.length, 3);
  EXPECT_EQ(o.field("content-range"), "bytes 2-4/10");
  EXPECT_EQ(answer({{"range", "bytes=20-"}}).a.status, 416);
  // a weak ETag never satisfies If-Range: the whole response
  EXPECT_EQ(answer({{"range", "bytes=2-4"}, {"if-range", "W/\"v1\""}}).a.status, 200);
  EXPECT_EQ(
      answer({{"range", "bytes=2-4"}, {"if-range", "Sun, 06 Nov 1994 08:49:37 GMT"}}).a.status,
      206);
  EXPECT_EQ(answer({{"range", "bytes=2-4"}}, "HEAD").a.status, 200);
}

} // namespace
} // namespace portico::cache
