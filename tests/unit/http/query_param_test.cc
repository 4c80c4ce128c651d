// query_param and RequestHead's path and query accessors.
#include "http/request_head.h"

#include <gtest/gtest.h>

namespace portico::http {
namespace {

TEST(QueryParam, FindsTheValue) {
  EXPECT_EQ(query_param("a=1&id=7", "id"), "7");
  EXPECT_EQ(query_param("id=7&a=1", "id"), "7");
  EXPECT_EQ(query_param("a=1&&id=7&", "id"), "7");
  EXPECT_EQ(query_param("id=a=b", "id"), "a=b");
  // The value is not decoded.
  EXPECT_EQ(query_param("name=a%20b+c", "name"), "a%20b+c");
}

TEST(QueryParam, FirstOccurrenceWins) {
  EXPECT_EQ(query_param("id=1&id=2", "id"), "1");
}

TEST(QueryParam, MissingOrEmpty) {
  EXPECT_EQ(query_param("", "id"), "");
  EXPECT_EQ(query_param("a=1", "id"), "");
  EXPECT_EQ(query_param("id", "id"), "");
  EXPECT_EQ(query_param("id=", "id"), "");
  // Keys match whole, case-sensitively.
  EXPECT_EQ(query_param("idx=1&xid=2&ID=3", "id"), "");
  EXPECT_EQ(query_param("i=1", "id"), "");
}

TEST(RequestHeadAccessors, PathAndQuery) {
  RequestHead h;
  h.target = "/a/b?x=1&y=2";
  EXPECT_EQ(h.path(), "/a/b");
  EXPECT_EQ(h.query(), "x=1&y=2");
  EXPECT_EQ(query_param(h.query(), "y"), "2");
  h.target = "/plain";
  EXPECT_EQ(h.path(), "/plain");
  EXPECT_EQ(h.query(), "");
  h.target = "/empty?";
  EXPECT_EQ(h.path(), "/empty");
  EXPECT_EQ(h.query(), "");
}

TEST(RequestHeadAccessors, FindAndClear) {
  RequestHead h;
  h.headers.push_back({"host", "a"});
  h.headers.push_back({"x-one", "1"});
  ASSERT_NE(h.find("x-one"), nullptr);
  EXPECT_EQ(h.find("x-one")->value, "1");
  EXPECT_EQ(h.find("x-two"), nullptr);
  h.content_length = 5;
  EXPECT_TRUE(h.has_body());
  h.clear();
  EXPECT_TRUE(h.headers.empty());
  EXPECT_EQ(h.content_length, -1);
  EXPECT_FALSE(h.has_body());
  EXPECT_TRUE(h.keep_alive);
}

} // namespace
} // namespace portico::http
