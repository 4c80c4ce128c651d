#include "convert/nginx_parser.h"

#include <gtest/gtest.h>
#include <map>

namespace portico::convert {
namespace {

// Parses text as /etc/nginx/nginx.conf, with files (path: text) for its includes.
NginxConfig parse(const std::string& text, std::map<std::string, std::string> files = {}) {
  FileReader read = [files](const std::string& p, std::string* why) -> std::optional<std::string> {
    auto it = files.find(p);
    if (it == files.end()) {
      *why = "No such file or directory";
      return std::nullopt;
    }
    return it->second;
  };
  GlobExpander expand = [files](const std::string& pattern) {
    std::vector<std::string> out;
    std::string prefix = pattern.substr(0, pattern.find('*'));
    for (const auto& [path, text] : files)
      if (pattern.find('*') == std::string::npos ? path == pattern : path.starts_with(prefix))
        out.push_back(path);
    return out;
  };
  return parse_nginx(text, "/etc/nginx/nginx.conf", read, expand);
}

TEST(NginxParser, DirectivesBlocksAndTheirPlaces) {
  NginxConfig c = parse("user root;\nhttp {\n  server { listen 80; }\n}\n");
  ASSERT_TRUE(c.errors.empty());
  ASSERT_EQ(c.directives.size(), 2u);
  EXPECT_EQ(c.directives[0].name, "user");
  EXPECT_EQ(c.directives[0].args, std::vector<std::string>{"root"});
  const Directive& http = c.directives[1];
  EXPECT_TRUE(http.has_block);
  ASSERT_EQ(http.block.size(), 1u);
  const Directive& listen = http.block[0].block[0];
  EXPECT_EQ(listen.name, "listen");
  EXPECT_EQ(listen.where(), "/etc/nginx/nginx.conf:3");
}

TEST(NginxParser, QuotesEscapesCommentsAndVariables) {
  NginxConfig c = parse("return 200 \"a \\\"b\\\" # c\\n\"; # a comment\n"
                        "location ~ \\.php$ { }\n"
                        "set $x '${host}x';\n"
                        "rewrite ^/${a}b$ /c;\n");
  ASSERT_TRUE(c.errors.empty()) << c.errors[0];
  ASSERT_EQ(c.directives.size(), 4u);
  EXPECT_EQ(c.directives[0].args[1], "a \"b\" # c\n");
  EXPECT_EQ(c.directives[1].args[1], "\\.php$"); // a regex keeps its backslash
  EXPECT_EQ(c.directives[2].args[1], "${host}x");
  EXPECT_EQ(c.directives[3].args[0], "^/${a}b$"); // ${...} is no block
}

TEST(NginxParser, IncludesByPathAndGlobRelativeToTheMainFile) {
  NginxConfig c = parse("http { include conf.d/*.conf; include /etc/nginx/one; }",
                        {{"/etc/nginx/conf.d/a.conf", "server { listen 1; }"},
                         {"/etc/nginx/conf.d/b.conf", "server { listen 2; }"},
                         {"/etc/nginx/one", "gzip on;"}});
  ASSERT_TRUE(c.errors.empty()) << c.errors[0];
  const auto& block = c.directives[0].block;
  ASSERT_EQ(block.size(), 3u);
  EXPECT_EQ(block[0].block[0].args[0], "1");
  EXPECT_EQ(block[1].block[0].where(), "/etc/nginx/conf.d/b.conf:1");
  EXPECT_EQ(block[2].name, "gzip");
  // A glob that names nothing is no error, as in nginx; a missing file is.
  EXPECT_TRUE(parse("include none/*.conf;").errors.empty());
  NginxConfig missing = parse("\n include nope.conf;");
  ASSERT_EQ(missing.errors.size(), 1u);
  EXPECT_EQ(missing.errors[0], "/etc/nginx/nginx.conf:2:1: include \"/etc/nginx/nope.conf\": no "
                               "such file");
}

TEST(NginxParser, ErrorsSayWhere) {
  auto first = [](const std::string& text) {
    NginxConfig c = parse(text);
    EXPECT_TRUE(c.directives.empty());
    return c.errors.empty() ? std::string() : c.errors[0];
  };
  EXPECT_EQ(first("http {\n  server {\n"),
            "/etc/nginx/nginx.conf:3:1: unexpected end of file, expecting \"}\"");
  EXPECT_EQ(first("user root"),
            "/etc/nginx/nginx.conf:1:10: unexpected end of file: \"user\" has no \";\"");
  EXPECT_EQ(first("}"), "/etc/nginx/nginx.conf:1:1: unexpected \"}\"");
  EXPECT_EQ(first("  ;"), "/etc/nginx/nginx.conf:1:3: unexpected \";\"");
  EXPECT_EQ(first("return 200 \"open"), "/etc/nginx/nginx.conf:1:12: unclosed quote");
  EXPECT_EQ(first("a \"b\"c;"),
            "/etc/nginx/nginx.conf:1:6: unexpected character after a quoted word");
}

TEST(NginxParser, HostileInputCostsBoundedWork) {
  std::string deep;
  for (int i = 0; i < 100; ++i)
    deep += "a {";
  NginxConfig c = parse(deep);
  ASSERT_FALSE(c.errors.empty());
  EXPECT_NE(c.errors[0].find("nested deeper than 32"), std::string::npos);
  // A file that includes itself twice would be read 2^16 times; the parser stops long before.
  NginxConfig loop =
      parse("include /etc/nginx/self;",
            {{"/etc/nginx/self", "include /etc/nginx/self; include /etc/nginx/self;"}});
  ASSERT_FALSE(loop.errors.empty());
}

} // namespace
} // namespace portico::convert
