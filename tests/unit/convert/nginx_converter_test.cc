#include "convert/nginx_converter.h"
#include "convert/nginx_parser.h"

#include <gtest/gtest.h>

namespace portico::convert {
namespace {

Conversion convert(const std::string& text) {
  FileReader none = [](const std::string&, std::string* why) -> std::optional<std::string> {
    *why = "none";
    return std::nullopt;
  };
  GlobExpander nothing = [](const std::string&) { return std::vector<std::string>{}; };
  NginxConfig c = parse_nginx(text, "n.conf", none, nothing);
  EXPECT_TRUE(c.errors.empty());
  return convert_nginx(c, "n.conf");
}

size_t at(const std::string& toml, const std::string& what) {
  size_t p = toml.find(what);
  EXPECT_NE(p, std::string::npos) << what << " in\n" << toml;
  return p;
}

TEST(NginxConverter, LocationsInNginxOrderOfMatching) {
  Conversion c = convert("server { listen 80;"
                         " location / { return 200 a; }"
                         " location /api/long/ { return 200 b; }"
                         " location ~ \\.php$ { return 200 c; }"
                         " location ^~ /img/ { return 200 d; }"
                         " location = /x { return 200 e; }"
                         " location /api/ { return 200 f; } }");
  size_t exact = at(c.toml, "path_exact = \"/x\""), caret = at(c.toml, "path_prefix = \"/img/\"");
  size_t regex = at(c.toml, "path_regex = \".*\\\\.php\""), longer = at(c.toml, "\"/api/long/\"");
  size_t shorter = at(c.toml, "path_prefix = \"/api/\""), root = at(c.toml, "path_prefix = \"/\"");
  EXPECT_LT(exact, caret);
  EXPECT_LT(caret, regex);
  EXPECT_LT(regex, longer);
  EXPECT_LT(longer, shorter);
  EXPECT_LT(shorter, root);
}

TEST(NginxConverter, NamedServersFirstTheDefaultsLastWithSchemes) {
  Conversion c = convert("server { listen 80; return 301 https://$host$request_uri; }"
                         "server { listen 443 ssl; server_name .example.com;"
                         " ssl_certificate a.pem; ssl_certificate_key a.key;"
                         " location / { proxy_pass http://127.0.0.1:9000; } }"
                         "server { listen 443 ssl default_server; server_name d.test;"
                         " ssl_certificate d.pem; ssl_certificate_key d.key; return 404; }");
  size_t named = at(c.toml, "host = \"example.com\"\nscheme = \"https\"");
  at(c.toml, "host = \"*.example.com\"");
  size_t redirect = at(c.toml, "scheme = \"http\"\npath_prefix = \"/\"\nredirect = { code = 301, "
                               "scheme = \"https\" }");
  size_t fallback = at(c.toml, "scheme = \"https\"\npath_prefix = \"/\"\ndirect_response = "
                               "{ status = 404");
  EXPECT_LT(named, redirect);
  EXPECT_LT(named, fallback);
  EXPECT_EQ(c.toml.find("d.test\"\n"), std::string::npos); // the default: any host
  at(c.toml, "endpoints = [\"127.0.0.1:9000\"]");
  // The default server's certificate first; the named one's by SNI.
  at(c.toml, "tls = { certificate = \"d.pem\", private_key = \"d.key\", sni = [{ server_names = "
             "[\"example.com\", \"*.example.com\"], certificate = \"a.pem\", private_key = "
             "\"a.key\" }] }");
}

TEST(NginxConverter, WhatCannotBeCarriedOverIsWarnedWithItsPlace) {
  Conversion c =
      convert("user x;\nhttp {\n server {\n  location / {\n"
              "   proxy_pass http://$backend;\n   if ($a) { return 403; }\n  }\n }\n}\n");
  ASSERT_EQ(c.warnings.size(), 3u);
  EXPECT_EQ(c.warnings[0], "n.conf:1: warning: user: not carried over (no Portico equivalent in "
                           "this converter)");
  EXPECT_EQ(c.warnings[1], "n.conf:6: warning: if: not carried over (no Portico equivalent in "
                           "this converter)");
  EXPECT_EQ(c.warnings[2], "n.conf:5: warning: proxy_pass: a URL with variables is not carried "
                           "over");
}

TEST(NginxConverter, AHeaderNameThatIsNoFieldNameIsWarnedNotWritten) {
  // Bytes TOML cannot hold became U+FFFD, so two such names were one key twice: a file that
  // does not parse (found by nginx_config_fuzz).
  Conversion c = convert("server { listen 80; location / {"
                         " proxy_set_header \"a\xf8"
                         "b\" x; proxy_set_header \"a\xf9"
                         "b\" y;"
                         " add_header \"c d\" z; proxy_set_header x-ok 1;"
                         " proxy_pass http://127.0.0.1:9000; } }");
  ASSERT_EQ(c.warnings.size(), 3u);
  EXPECT_NE(c.warnings[0].find("is not a header field name"), std::string::npos) << c.warnings[0];
  EXPECT_EQ(c.toml.find("\\ufffd"), std::string::npos) << c.toml;
  EXPECT_EQ(c.toml.find("\"c d\""), std::string::npos) << c.toml;
  at(c.toml, "request_headers_add = { \"x-ok\" = \"1\" }");
}

TEST(NginxConverter, RewritesOfALiteralPathOrOfEveryPath) {
  Conversion c = convert("server { listen 80; rewrite ^/a$ /b permanent;"
                         " rewrite ^(.*)$ https://www.example.com$1 redirect;"
                         " rewrite ^/p/(\\d+)$ /q/$1 last; }");
  at(c.toml, "path_exact = \"/a\"\nredirect = { code = 301, path = \"/b\" }");
  at(c.toml, "redirect = { code = 302, scheme = \"https\", host = \"www.example.com\" }");
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("only a rewrite ending in permanent or redirect"),
            std::string::npos);
}

TEST(NginxConverter, ABodyLimitALocationRepeatsIsNoWarning) {
  Conversion same = convert("http { client_max_body_size 2m; server { listen 80;"
                            " location / { client_max_body_size 2m; return 200 x; } } }");
  EXPECT_TRUE(same.warnings.empty()) << same.warnings[0];
  at(same.toml, "max_body_bytes = 2097152");
  Conversion other = convert("http { client_max_body_size 2m; server { listen 80;"
                             " location / { client_max_body_size 8m; return 200 x; } } }");
  ASSERT_EQ(other.warnings.size(), 1u);
  EXPECT_NE(other.warnings[0].find("a body limit per location is not carried over"),
            std::string::npos);
}

} // namespace
} // namespace portico::convert
