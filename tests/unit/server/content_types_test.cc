// Content types by extension: the built-in table, then a mime.types file.
#include "server/content_types.h"

#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

namespace portico::server {
namespace {

TEST(ContentTypes, BuiltInFirst) {
  EXPECT_EQ(content_type_for("a/b.CSS"), "text/css; charset=utf-8");
  EXPECT_EQ(content_type_for("app.mjs"), "text/javascript; charset=utf-8");
  EXPECT_EQ(content_type_for("m.wasm"), "application/wasm");
  EXPECT_EQ(content_type_for("README"), kDefaultContentType);
  EXPECT_EQ(content_type_for(".profile"), kDefaultContentType);
  EXPECT_EQ(content_type_for("x.qqq-not-a-type"), kDefaultContentType);
}

TEST(ContentTypes, ReadsAMimeTypesFile) {
  char path[] = "/tmp/portico-mime-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  {
    std::ofstream f(path);
    f << "# comment line\n"
         "application/epub+zip\t\t\tepub\n"
         "image/avif avif HIF # trailing comment\n"
         "no-slash ignored\n"
         "application/x-first dup\n"
         "application/x-second dup\n"
         "text/lonely\n";
  }
  auto types = read_mime_types(path);
  ::unlink(path);
  EXPECT_EQ(types.size(), 4u);
  EXPECT_EQ(types["epub"], "application/epub+zip");
  EXPECT_EQ(types["hif"], "image/avif");
  EXPECT_EQ(types["dup"], "application/x-first");
  EXPECT_EQ(types.count("ignored"), 0u);
  EXPECT_TRUE(read_mime_types("/no/such/file").empty());
}

} // namespace
} // namespace portico::server
