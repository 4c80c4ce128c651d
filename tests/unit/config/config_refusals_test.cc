// Config values that cannot be meant are errors with FILE:LINE:COL (issue 10, item 9): NaN and
// infinity, a 20-digit port, unix paths too long for sockaddr_un, "[]:80", a URL as an
// endpoint, an upper-case request_id_header, two listeners on one socket, the admin address
// on a listener's.
#include "config/config_loader.h"

#include <gtest/gtest.h>

namespace portico::config {
namespace {

// A whole config around one changed part: {server} lines, {listeners}, {admin}, {endpoint}.
std::string config(std::string_view server, std::string_view listeners, std::string_view admin,
                   std::string_view endpoint) {
  std::string out = "[server]\n";
  out += server;
  out += "\n";
  out += listeners.empty() ? "[[listener]]\naddress = \"127.0.0.1:8080\"\n" : listeners;
  out += "\n[admin]\n";
  out += admin.empty() ? "address = \"127.0.0.1:9901\"" : admin;
  out += "\n[[cluster]]\nname = \"app\"\nendpoints = [";
  out += endpoint.empty() ? "\"127.0.0.1:9000\"" : endpoint;
  out += "]\n[[route]]\ncluster = \"app\"\n";
  return out;
}

// Parses text, expects failure, and returns the first error.
std::string refused(const std::string& text) {
  std::vector<std::string> errors;
  auto c = parse_config(text, "t.toml", &errors);
  EXPECT_FALSE(c) << text;
  return errors.empty() ? "" : errors.front();
}

TEST(ConfigRefusals, TheBaseIsAccepted) {
  std::vector<std::string> errors;
  EXPECT_TRUE(parse_config(config("", "", "", ""), "t.toml", &errors)) << errors[0];
}

TEST(ConfigRefusals, PerClientConnectionsBehindProxyProtocol) {
  std::string e = refused(config("",
                                 "[[listener]]\naddress = \"127.0.0.1:8080\"\nproxy_protocol = "
                                 "true\nmax_connections_per_client = 3\n",
                                 "", ""));
  EXPECT_TRUE(e.starts_with("t.toml:6:")) << e;
  EXPECT_NE(e.find("not with proxy_protocol"), std::string::npos) << e;
}

TEST(ConfigRefusals, QuicKeys) {
  auto listener = [](std::string_view quic) {
    return config("",
                  "[[listener]]\naddress = \"127.0.0.1:8443\"\nquic = " + std::string(quic) + "\n",
                  "", "");
  };
  // HTTP/3 is always encrypted: its handshake needs the listener's certificate.
  EXPECT_EQ(refused(listener("true")),
            "t.toml:5:8: [[listener]]: quic needs the listener's tls (HTTP/3 is always encrypted)");
  EXPECT_EQ(refused(listener("\"yes\"")),
            "t.toml:5:8: [[listener]]: 'quic' must be true, false or a table");
  EXPECT_NE(refused(listener("{ max_streams = 0 }")).find("'max_streams' must be a number from 1"),
            std::string::npos);
  EXPECT_EQ(refused(listener("{ window = 1 }")),
            "t.toml:5:10: unknown key 'window' in [[listener]] quic");
  std::vector<std::string> errors;
  auto off = parse_config(listener("false"), "t.toml", &errors);
  ASSERT_TRUE(off) << errors[0];
  EXPECT_FALSE(off->listeners[0].quic.enabled);
}

TEST(ConfigRefusals, NanAndInfinity) {
  for (auto v : {"nan", "inf", "-inf", "+nan"}) {
    std::string e = refused(config(std::string("keepalive_timeout = ") + v, "", "", ""));
    EXPECT_TRUE(e.starts_with("t.toml:2:21: ")) << e;
    EXPECT_NE(e.find("must be a number"), std::string::npos) << e;
  }
}

TEST(ConfigRefusals, TwentyDigitPortInAnEndpoint) {
  std::string e = refused(config("", "", "", "\"127.0.0.1:12345678901234567890\""));
  EXPECT_NE(e.find("port that is not 1 to 65535"), std::string::npos) << e;
  EXPECT_TRUE(e.starts_with("t.toml:10:14: ")) << e;
}

TEST(ConfigRefusals, TwentyDigitPortInAListener) {
  std::string e =
      refused(config("", "[[listener]]\naddress = \"127.0.0.1:12345678901234567890\"\n", "", ""));
  EXPECT_TRUE(e.starts_with("t.toml:4:11: ")) << e;
}

TEST(ConfigRefusals, UnixPathTooLong) {
  std::string path = "/" + std::string(107, 'a');
  std::string e = refused(config("", "[[listener]]\naddress = \"unix:" + path + "\"\n", "", ""));
  EXPECT_NE(e.find("at most 107 fit"), std::string::npos) << e;
  e = refused(config("", "", "", "\"unix:" + path + "\""));
  EXPECT_NE(e.find("longer than 107 bytes"), std::string::npos) << e;
  // 107 bytes fit.
  std::vector<std::string> errors;
  EXPECT_TRUE(
      parse_config(config("", "", "", "\"unix:/" + std::string(106, 'a') + "\""), "t", &errors));
}

TEST(ConfigRefusals, EmptyBrackets) {
  std::string e = refused(config("", "[[listener]]\naddress = \"[]:80\"\n", "", ""));
  EXPECT_NE(e.find("empty address in brackets"), std::string::npos) << e;
  e = refused(config("", "", "", "\"[]:80\""));
  EXPECT_NE(e.find("has no host"), std::string::npos) << e;
}

TEST(ConfigRefusals, UrlAsAnEndpoint) {
  std::string e = refused(config("", "", "", "\"127.0.0.1:9000\", \"http://app:8080\""));
  EXPECT_NE(e.find("endpoint 'http://app:8080' is a URL"), std::string::npos) << e;
  EXPECT_TRUE(e.starts_with("t.toml:10:32: ")) << e; // the entry itself
}

TEST(ConfigRefusals, UnbracketedIpv6Endpoint) {
  std::string e = refused(config("", "", "", "\"::1:80\""));
  EXPECT_NE(e.find("brackets"), std::string::npos) << e;
  std::vector<std::string> errors;
  EXPECT_TRUE(parse_config(config("", "", "", "\"[::1]:80\""), "t", &errors));
}

TEST(ConfigRefusals, UpperCaseRequestIdHeader) {
  std::string e = refused(config("request_id_header = \"X-Request-Id\"", "", "", ""));
  EXPECT_TRUE(e.starts_with("t.toml:2:21: ")) << e;
  EXPECT_NE(e.find("lower-case"), std::string::npos) << e;
  std::vector<std::string> errors;
  EXPECT_TRUE(parse_config(config("request_id_header = \"\"", "", "", ""), "t", &errors));
}

TEST(ConfigRefusals, TwoListenersOnOneSocket) {
  std::string two = "[[listener]]\naddress = \"127.0.0.1:8443\"\n"
                    "[[listener]]\naddress = \"127.0.0.1:8443\"\ntls = {}\n";
  std::string e = refused(config("", two, "", ""));
  EXPECT_TRUE(e.starts_with("t.toml:6:11: ")) << e;
  EXPECT_NE(e.find("cannot share a socket"), std::string::npos) << e;
  // A wildcard takes the port on every address of its family.
  e = refused(config("",
                     "[[listener]]\naddress = \"*:80\"\n[[listener]]\naddress = "
                     "\"127.0.0.1:80\"\n",
                     "", ""));
  EXPECT_NE(e.find("cannot share a socket"), std::string::npos) << e;
  e = refused(config("",
                     "[[listener]]\naddress = \"0.0.0.0:80\"\n[[listener]]\naddress = "
                     "\"127.0.0.1:80\"\n",
                     "", ""));
  EXPECT_NE(e.find("cannot share a socket"), std::string::npos) << e;
  // Different ports, or v4 and v6 addresses, are fine.
  std::vector<std::string> errors;
  EXPECT_TRUE(parse_config(config("",
                                  "[[listener]]\naddress = \"0.0.0.0:80\"\n[[listener]]\n"
                                  "address = \"[::]:80\"\n[[listener]]\naddress = \"0.0.0.0:81\"\n",
                                  "", ""),
                           "t", &errors))
      << errors[0];
}

TEST(ConfigRefusals, AdminOnAListenersAddress) {
  std::string e = refused(config("", "", "address = \"127.0.0.1:8080\"", ""));
  EXPECT_TRUE(e.starts_with("t.toml:7:11: ")) << e;
  EXPECT_NE(e.find("is also a listener's"), std::string::npos) << e;
}

} // namespace
} // namespace portico::config

namespace portico::config {
namespace {

constexpr std::string_view kTwoClusters = R"([[listener]]
address = "127.0.0.1:8080"
[[cluster]]
name = "h1"
endpoints = ["127.0.0.1:9000"]
[[cluster]]
name = "h2"
endpoints = ["127.0.0.1:9001"]
protocol = "h2c"
)";

TEST(ConfigRefusals, WebSocketRoutes) {
  std::vector<std::string> errors;
  auto ok =
      parse_config(std::string(kTwoClusters) +
                       "[[route]]\ncluster = \"h1\"\nwebsocket = true\nupgrade_timeout = 30\n",
                   "t.toml", &errors);
  ASSERT_TRUE(ok) << errors[0];
  EXPECT_TRUE(ok->routes[0].websocket);
  EXPECT_EQ(ok->routes[0].upgrade_timeout, 30);
  EXPECT_EQ(refused(std::string(kTwoClusters) + "[[route]]\ncluster = \"h2\"\nwebsocket = true\n"),
            "t.toml:12:13: [[route]]: websocket needs a cluster that speaks http1 (an HTTP/1.1 "
            "Upgrade); 'h2' speaks h2c");
  EXPECT_NE(refused(std::string(kTwoClusters) + "[[route]]\ncluster = \"h1\"\nwebsocket = 1\n")
                .find("t.toml:12:"),
            std::string::npos);
  EXPECT_NE(
      refused(std::string(kTwoClusters) + "[[route]]\ncluster = \"h1\"\nupgrade_timeout = 0\n")
          .find("'upgrade_timeout' must be a number from 0.001"),
      std::string::npos);
}

TEST(ConfigRefusals, ProxyProtocolKeys) {
  std::vector<std::string> errors;
  auto ok = parse_config(
      "[[listener]]\naddress = \"127.0.0.1:8080\"\nproxy_protocol = true\n[[cluster]]\nname = "
      "\"a\"\nendpoints = [\"127.0.0.1:9\"]\nsend_proxy_protocol = \"v2\"\n[[route]]\ncluster "
      "= \"a\"\n",
      "t.toml", &errors);
  ASSERT_TRUE(ok) << errors[0];
  EXPECT_TRUE(ok->listeners[0].proxy_protocol);
  EXPECT_EQ(ok->clusters[0].send_proxy_protocol, config::ProxyProtocolVersion::V2);
  std::string bad = std::string(kTwoClusters);
  bad.insert(bad.find("protocol = \"h2c\""), "send_proxy_protocol = \"v1\"\n");
  EXPECT_NE(refused(bad + "[[route]]\ncluster = \"h1\"\n").find("needs protocol \"http1\""),
            std::string::npos);
  bad = std::string(kTwoClusters);
  bad.insert(bad.find("[[cluster]]\nname = \"h2\""), "send_proxy_protocol = \"v3\"\n");
  EXPECT_EQ(refused(bad + "[[route]]\ncluster = \"h1\"\n"),
            "t.toml:6:23: cluster 'h1': send_proxy_protocol must be \"v1\", \"v2\" or \"\" (none)");
}

TEST(ConfigRefusals, ClusterTls) {
  std::vector<std::string> errors;
  auto ok =
      parse_config(std::string(kTwoClusters) +
                       "[[route]]\ncluster = \"h1\"\n[[cluster]]\nname = \"t\"\nendpoints = "
                       "[\"127.0.0.1:443\"]\ntls = { server_name = \"a.test\", verify = false }\n",
                   "t.toml", &errors);
  ASSERT_TRUE(ok) << errors[0];
  EXPECT_TRUE(ok->clusters[2].tls.enabled);
  EXPECT_EQ(ok->clusters[2].tls.server_name, "a.test");
  EXPECT_FALSE(ok->clusters[2].tls.verify);
  std::string base = std::string(kTwoClusters) + "[[route]]\ncluster = \"h1\"\n";
  ASSERT_TRUE(parse_config(base + "[[cluster]]\nname = \"t\"\nendpoints = [\"127.0.0.1:443\"]\n"
                                  "protocol = \"h2c\"\ntls = {}\n",
                           "t.toml", &errors)); // HTTP/2 over TLS (ALPN h2)
  EXPECT_NE(refused(base + "[[cluster]]\nname = \"t\"\nendpoints = [\"127.0.0.1:443\"]\ntls = { "
                           "certificate = \"/etc/hostname\" }\n")
                .find("needs both certificate and private_key"),
            std::string::npos);
  EXPECT_NE(refused(base + "[[cluster]]\nname = \"t\"\nendpoints = [\"127.0.0.1:443\"]\ntls = { "
                           "ca = \"/nonexistent/ca.pem\" }\n")
                .find(":14: CA bundle '/nonexistent/ca.pem' cannot be read"),
            std::string::npos);
}

TEST(ConfigRefusals, BalancingAndHealthChecks) {
  std::string head = "[[listener]]\naddress = \"127.0.0.1:8080\"\n[[route]]\ncluster = \"a\"\n"
                     "[[cluster]]\nname = \"a\"\n";
  std::vector<std::string> errors;
  auto ok = parse_config(head + "endpoints = [\"127.0.0.1:1\", { address = \"127.0.0.1:2\", "
                                "weight = 3 }]\nlb = \"round_robin\"\nhealth_check = { path = "
                                "\"/up\", expect = \"200-399\", interval = 1 }\n",
                         "t.toml", &errors);
  ASSERT_TRUE(ok) << errors[0];
  const auto& c = ok->clusters[0];
  EXPECT_EQ(c.endpoints, (std::vector<std::string>{"127.0.0.1:1", "127.0.0.1:2"}));
  EXPECT_EQ(c.weights, (std::vector<int>{1, 3}));
  EXPECT_EQ(c.lb, config::LoadBalancing::ROUND_ROBIN);
  EXPECT_TRUE(c.health_check.enabled);
  EXPECT_EQ(c.health_check.path, "/up");
  EXPECT_EQ(c.health_check.expect_min, 200);
  EXPECT_EQ(c.health_check.expect_max, 399);
  EXPECT_NE(refused(head + "endpoints = [\"127.0.0.1:1\"]\nlb = \"fastest\"\n")
                .find("lb is \"least_request\", \"round_robin\", \"random_two\", \"ring_hash\" or "
                      "\"maglev\""),
            std::string::npos);
  EXPECT_NE(refused(head + "endpoints = [{ address = \"127.0.0.1:1\", weight = 0 }]\n")
                .find("'weight' must be a number from 1 to 1000"),
            std::string::npos);
  EXPECT_NE(refused(head + "endpoints = [\"127.0.0.1:1\"]\nhealth_check = { expect = \"2xy\" }\n")
                .find("expect is a status"),
            std::string::npos);
  EXPECT_NE(refused(head + "endpoints = [\"127.0.0.1:1\"]\nhealth_check = { path = \"up\" }\n")
                .find("path must start with '/'"),
            std::string::npos);
}

TEST(ConfigRefusals, RouteMatchesAndActions) {
  std::string head = "[[listener]]\naddress = \"127.0.0.1:8080\"\n[[cluster]]\nname = \"a\"\n"
                     "endpoints = [\"127.0.0.1:1\"]\n[[route]]\n";
  std::vector<std::string> errors;
  auto ok = parse_config(head + "path_prefix = \"/api/\"\nprefix_rewrite = \"/\"\ncluster = \"a\"\n"
                                "request_headers_add = { X-A = \"1\" }\ntimeout = 2\nretry = { "
                                "on_reset = false }\n[[route]]\npath_regex = \"/u/[0-9]+\"\n"
                                "direct_response = { status = 204 }\n[[route]]\nscheme = \"http\"\n"
                                "redirect = { scheme = \"https\" }\n",
                         "t.toml", &errors);
  ASSERT_TRUE(ok) << errors[0];
  EXPECT_EQ(ok->routes[0].request_headers_add[0].first, "x-a");
  EXPECT_EQ(ok->routes[0].retry_on_reset, 0);
  EXPECT_EQ(ok->routes[1].path_prefix, "");
  EXPECT_TRUE(ok->routes[2].has_redirect);
  EXPECT_EQ(ok->routes[2].redirect.code, 301);
  auto refusal = [&](const std::string& body, const std::string& says) {
    std::string e = refused(head + body);
    EXPECT_NE(e.find(says), std::string::npos) << e;
    EXPECT_EQ(e.rfind("t.toml:", 0), 0u) << e;
  };
  refusal("path_prefix = \"/\"\npath_exact = \"/x\"\ncluster = \"a\"\n", "not several");
  refusal("path_regex = \"/(unclosed\"\ncluster = \"a\"\n", "path_regex: missing )");
  // Found by the config fuzzer: an empty regex was taken, and matched every path.
  refusal("path_regex = \"\"\ncluster = \"a\"\n", "path_regex is empty");
  refusal("path_exact = \"/x\"\nprefix_rewrite = \"/y\"\ncluster = \"a\"\n",
          "prefix_rewrite needs a path_prefix");
  refusal("redirect = { code = 305 }\n", "code is 301, 302, 303, 307 or 308");
  refusal("redirect = {}\ndirect_response = {}\n", "redirect or direct_response, not both");
  refusal("path_prefix = \"/\"\n", "'cluster' is required");
  refusal("cluster = \"a\"\nrequest_headers_add = { \"bad name\" = \"v\" }\n",
          "maps field names to string values");
  refusal("cluster = \"a\"\nscheme = \"ftp\"\n", "scheme is \"http\" or \"https\"");
}

} // namespace
} // namespace portico::config
