// The access log template (issue 22, defect 4): "$name" and "${name}", "$$", the request's
// fields by $http_NAME, and a misspelt field an error naming it.
#include "config/config_loader.h"
#include "config/log_format.h"

#include <gtest/gtest.h>

namespace portico::config {
namespace {

TEST(LogFormat, FieldsAndLiterals) {
  auto pieces = parse_log_format("a $status ${ttfb}s $$ $http_x_forwarded_for.");
  ASSERT_TRUE(pieces) << pieces.error();
  ASSERT_EQ(pieces->size(), 4u);
  EXPECT_EQ((*pieces)[0], (LogPiece{"a ", LogField::STATUS, ""}));
  EXPECT_EQ((*pieces)[1], (LogPiece{" ", LogField::TTFB, ""}));
  EXPECT_EQ((*pieces)[2], (LogPiece{"s $ ", LogField::REQUEST_FIELD, "x-forwarded-for"}));
  EXPECT_EQ((*pieces)[3], (LogPiece{".", LogField::NONE, ""}));
  EXPECT_TRUE(parse_log_format(kTextLogFormat));
  EXPECT_TRUE(parse_log_format(kCombinedLogFormat));
}

TEST(LogFormat, AMisspeltFieldIsNamed) {
  auto bad = parse_log_format("$status $stauts");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("unknown field '$stauts' at offset 8"), std::string::npos)
      << bad.error();
  EXPECT_FALSE(parse_log_format("${status"));
  EXPECT_FALSE(parse_log_format("$http_"));
}

std::vector<std::string> load(const std::string& format) {
  std::vector<std::string> errors;
  parse_config("[[listener]]\naddress = \"127.0.0.1:8080\"\naccess_log = \"/dev/null\"\n"
               "access_log_format = " +
                   format +
                   "\n[[cluster]]\nname = \"a\"\nendpoints = [\"127.0.0.1:1\"]\n"
                   "[[route]]\ncluster = \"a\"\n",
               "t.toml", &errors);
  return errors;
}

TEST(LogFormat, InTheConfig) {
  EXPECT_TRUE(load("\"combined\"").empty());
  EXPECT_TRUE(load("\"$client $status\"").empty());
  auto errors = load("\"$client $stauts\"");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rfind("t.toml:4:21: ", 0), 0u) << errors[0];
  EXPECT_NE(errors[0].find("unknown field '$stauts'"), std::string::npos) << errors[0];
  errors = load("\"jsno\"");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("access_log_format is text, combined, json, or a template"),
            std::string::npos)
      << errors[0];
}

} // namespace
} // namespace portico::config
