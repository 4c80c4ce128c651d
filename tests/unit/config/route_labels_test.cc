// Route labels are unique (issue 22, defect 3): every path_exact and path_regex route was
// labelled "*" before, and two series with one label set lose samples in Prometheus.
#include "config/config_loader.h"

#include <gtest/gtest.h>

namespace portico::config {
namespace {

const std::string head = "[[listener]]\naddress = \"127.0.0.1:8080\"\n[[cluster]]\nname = \"a\"\n"
                         "endpoints = [\"127.0.0.1:1\"]\n";

std::vector<std::string> labels(const std::string& routes) {
  std::vector<std::string> errors;
  auto c = parse_config(head + routes, "t.toml", &errors);
  EXPECT_TRUE(c) << (errors.empty() ? "" : errors[0]);
  std::vector<std::string> out;
  if (c)
    for (const auto& r : c->routes)
      out.push_back(r.label);
  return out;
}

TEST(RouteLabels, EachMatchKindIsWrittenItsOwnWay) {
  EXPECT_EQ(labels("[[route]]\npath_exact = \"/ping\"\ncluster = \"a\"\n"
                   "[[route]]\npath_exact = \"/health\"\ncluster = \"a\"\n"
                   "[[route]]\nhost = \"example.com\"\npath_regex = \"/v[0-9]+/.*\"\n"
                   "cluster = \"a\"\n"
                   "[[route]]\nscheme = \"http\"\nredirect = { scheme = \"https\" }\n"
                   "[[route]]\npath_prefix = \"/api/\"\ncluster = \"a\"\n"),
            (std::vector<std::string>{"*=/ping", "*=/health", "example.com~/v[0-9]+/.*",
                                      "http://*/", "*/api/"}));
}

TEST(RouteLabels, ANameIsTheLabel) {
  EXPECT_EQ(labels("[[route]]\nname = \"ping\"\npath_exact = \"/ping\"\ncluster = \"a\"\n"
                   "[[route]]\ncluster = \"a\"\n"),
            (std::vector<std::string>{"ping", "*/"}));
}

TEST(RouteLabels, ATwinTakesItsPosition) {
  // The same match twice (the second behind the first, or one per scheme listener), and a
  // match spelled as another route's name.
  EXPECT_EQ(labels("[[route]]\ncluster = \"a\"\n[[route]]\ncluster = \"a\"\n"
                   "[[route]]\nname = \"*=/x\"\ncluster = \"a\"\n"
                   "[[route]]\npath_exact = \"/x\"\ncluster = \"a\"\n"),
            (std::vector<std::string>{"*/", "*/#2", "*=/x", "*=/x#4"}));
}

TEST(RouteLabels, APositionTakenByANameIsPassedOver) {
  // Found by the config fuzzer: a name spelt as a twin's label gave two routes one label.
  EXPECT_EQ(labels("[[route]]\ncluster = \"a\"\n[[route]]\ncluster = \"a\"\n"
                   "[[route]]\nname = \"*/#2\"\ncluster = \"a\"\n"),
            (std::vector<std::string>{"*/", "*/#2#2", "*/#2"}));
}

TEST(RouteLabels, TwoRoutesOfOneNameAreAnError) {
  std::vector<std::string> errors;
  EXPECT_FALSE(parse_config(head + "[[route]]\nname = \"api\"\ncluster = \"a\"\n"
                                   "[[route]]\nname = \"api\"\ncluster = \"a\"\n",
                            "t.toml", &errors));
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0].rfind("t.toml:10:8:", 0), 0u) << errors[0];
  EXPECT_NE(errors[0].find("name 'api' is another route's"), std::string::npos) << errors[0];
  errors.clear();
  EXPECT_FALSE(parse_config(head + "[[route]]\nname = \"\"\ncluster = \"a\"\n", "t.toml", &errors));
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].find("name is a non-empty string"), std::string::npos) << errors[0];
}

} // namespace
} // namespace portico::config
