// [admin]'s control socket and token file (issue 29, item 6): what is refused at load with
// FILE:LINE:COL, what the dump shows (the token file, never the token) and what a reload
// applies.
#include "config/config_diff.h"
#include "config/config_dump.h"
#include "config/config_loader.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <openssl/sha.h>
#include <sys/stat.h>
#include <unistd.h>

namespace portico::config {
namespace {

class ConfigAdmin : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/portico-config-admin-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  std::string token_file(std::string_view text, mode_t mode) {
    std::string path = dir_ + "/admin.token";
    std::ofstream(path, std::ios::trunc) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }
  // A whole config whose [admin] table is address and then lines.
  static std::string with_admin(std::string_view lines) {
    return "[[listener]]\naddress = \"127.0.0.1:8080\"\n[admin]\naddress = \"127.0.0.1:9901\"\n" +
           std::string(lines) +
           "\n[[cluster]]\nname = \"app\"\nendpoints = [\"127.0.0.1:9000\"]\n[[route]]\n"
           "cluster = \"app\"\n";
  }
  static std::vector<std::string> errors_of(const std::string& text) {
    std::vector<std::string> errors;
    EXPECT_FALSE(parse_config(text, "a.toml", &errors)) << text;
    return errors;
  }
  static Config loaded(const std::string& text) {
    std::vector<std::string> errors;
    auto c = parse_config(text, "a.toml", &errors);
    EXPECT_TRUE(c) << (errors.empty() ? "" : errors.front());
    return c ? *c : Config{};
  }

  std::string dir_;
};

TEST_F(ConfigAdmin, TheDefaultsAreLoopbackControlAndNoSocket) {
  Config c = loaded(with_admin(""));
  EXPECT_TRUE(c.admin.access.allow_loopback_control);
  EXPECT_TRUE(c.admin.access.token_file.empty());
  EXPECT_TRUE(c.admin.access.token_sha256.empty());
  EXPECT_TRUE(c.admin.control_socket.path.empty());
}

TEST_F(ConfigAdmin, ATokenFileIsKeptAsTheDigestOfItsTrimmedToken) {
  std::string path = token_file("  0123456789abcdef0123\r\n", 0600);
  Config c = loaded(with_admin("token_file = \"" + path + "\""));
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>("0123456789abcdef0123"), 20, d);
  EXPECT_EQ(c.admin.access.token_sha256, std::string(reinterpret_cast<char*>(d), sizeof d));
  EXPECT_EQ(c.admin.access.token_file, path);
  EXPECT_TRUE(c.warnings.empty());
}

TEST_F(ConfigAdmin, ATokenFileOthersMayReadOrWriteIsRefused) {
  for (mode_t mode : {0644, 0604, 0602, 0666}) {
    std::string path = token_file("0123456789abcdef0123\n", mode);
    auto errors = errors_of(with_admin("token_file = \"" + path + "\""));
    ASSERT_EQ(errors.size(), 1u) << mode;
    EXPECT_TRUE(errors[0].starts_with("a.toml:5:14: [admin]: token_file '" + path + "' is "))
        << errors[0];
    EXPECT_NE(errors[0].find(mode & S_IROTH ? "readable by every user" : "writable by every user"),
              std::string::npos)
        << errors[0];
  }
  // Its group may read it (portico's group, beside root).
  loaded(with_admin("token_file = \"" + token_file("0123456789abcdef0123\n", 0640) + "\""));
}

TEST_F(ConfigAdmin, ATokenFileWithoutOneTokenIsRefused) {
  struct Case {
    std::string text;
    const char* says;
  } cases[] = {{"", "holds no token"},
               {" \n\n", "holds no token"},
               {"two words", "spaces or control characters"},
               {"tab\there", "spaces or control characters"},
               {std::string(5000, 'a'), "is over 4096 bytes"}};
  for (const auto& k : cases) {
    std::string path = token_file(k.text, 0600);
    auto errors = errors_of(with_admin("token_file = \"" + path + "\""));
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors[0].find(k.says), std::string::npos) << errors[0];
  }
  auto missing = errors_of(with_admin("token_file = \"" + dir_ + "/none\""));
  EXPECT_NE(missing[0].find("cannot be read: No such file"), std::string::npos) << missing[0];
  auto directory = errors_of(with_admin("token_file = \"" + dir_ + "\""));
  EXPECT_NE(directory[0].find("is not a regular file"), std::string::npos) << directory[0];
}

TEST_F(ConfigAdmin, AShortTokenIsAWarning) {
  Config c = loaded(with_admin("token_file = \"" + token_file("short\n", 0600) + "\""));
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("5 bytes"), std::string::npos) << c.warnings[0];
}

TEST_F(ConfigAdmin, TheControlSocketModeAndOwner) {
  Config c = loaded(with_admin("control_socket = \"/run/portico/control.sock\""));
  EXPECT_EQ(c.admin.control_socket.kind, core::ListenAddress::Kind::UNIX);
  EXPECT_EQ(c.admin.control_socket.path, "/run/portico/control.sock");
  EXPECT_EQ(c.admin.control_socket.mode, 0600); // the default
  EXPECT_EQ(c.admin.control_socket.uid, -1);
  EXPECT_EQ(c.admin.control_socket.gid, -1);
  c = loaded(with_admin("control_socket = \"/run/c.sock\"\ncontrol_socket_mode = \"0660\"\n"
                        "control_socket_owner = \"root:65534\""));
  EXPECT_EQ(c.admin.control_socket.mode, 0660);
  EXPECT_EQ(c.admin.control_socket.uid, 0);
  EXPECT_EQ(c.admin.control_socket.gid, 65534);
  c = loaded(with_admin("control_socket = \"/run/c.sock\"\ncontrol_socket_owner = \":0\""));
  EXPECT_EQ(c.admin.control_socket.uid, -1);
  EXPECT_EQ(c.admin.control_socket.gid, 0);
}

TEST_F(ConfigAdmin, AControlSocketEveryUserMayConnectToIsRefused) {
  for (const char* mode : {"0666", "0602", "777", "0002"}) {
    auto errors = errors_of(with_admin(
        "control_socket = \"/run/c.sock\"\ncontrol_socket_mode = \"" + std::string(mode) + "\""));
    ASSERT_EQ(errors.size(), 1u) << mode;
    EXPECT_TRUE(errors[0].starts_with("a.toml:6:23: [admin]: control_socket_mode 0")) << errors[0];
    EXPECT_NE(errors[0].find("lets every user connect"), std::string::npos) << errors[0];
  }
}

TEST_F(ConfigAdmin, ControlSocketValuesThatCannotBeMeant) {
  struct Case {
    std::string lines;
    const char* says;
  } cases[] = {
      {"control_socket = \"run/c.sock\"", "must be an absolute path"},
      {"control_socket = \"/" + std::string(120, 'x') + "\"", "fit"},
      {"control_socket = \"/run/c.sock\"\ncontrol_socket_mode = \"0999\"", "octal mode"},
      {"control_socket = \"/run/c.sock\"\ncontrol_socket_mode = \"1600\"", "octal mode"},
      {"control_socket = \"/run/c.sock\"\ncontrol_socket_mode = 600", "must be a string"},
      {"control_socket = \"/run/c.sock\"\ncontrol_socket_owner = \"\"", "USER:GROUP"},
      {"control_socket = \"/run/c.sock\"\ncontrol_socket_owner = \"no-such-user-here\"",
       "no user 'no-such-user-here'"},
      {"control_socket = \"/run/c.sock\"\ncontrol_socket_owner = \"root:no-such-group\"",
       "no group 'no-such-group'"},
      {"control_socket_mode = \"0600\"", "needs a control_socket"},
      {"control_socket_owner = \"root\"", "needs a control_socket"},
      {"control_socket = \"/run/a.sock\"\naddress = \"unix:/run/a.sock\"", "admin address itself"},
      {"allow_loopback_control = \"no\"", "must be true or false"},
      {"token = \"inline\"", "unknown key 'token'"},
  };
  for (const auto& k : cases) {
    // [admin] address is given once: the case that sets it replaces the default line.
    std::string text = with_admin(k.lines);
    if (k.lines.find("\naddress") != std::string::npos)
      text.replace(text.find("address = \"127.0.0.1:9901\"\n"), 27, "");
    auto errors = errors_of(text);
    ASSERT_FALSE(errors.empty()) << k.lines;
    EXPECT_NE(errors[0].find(k.says), std::string::npos) << errors[0];
  }
  auto errors = errors_of("[[listener]]\naddress = \"unix:/run/a.sock\"\n[admin]\n"
                          "control_socket = \"/run/a.sock\"\n[[cluster]]\nname = \"app\"\n"
                          "endpoints = [\"127.0.0.1:9000\"]\n[[route]]\ncluster = \"app\"\n");
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].find("is also a listener's"), std::string::npos) << errors[0];
}

TEST_F(ConfigAdmin, TheDumpNamesTheTokenFileNeverTheToken) {
  std::string path = token_file("the-secret-token-value-123456\n", 0600);
  Config c = loaded(with_admin("token_file = \"" + path +
                               "\"\ncontrol_socket = \"/run/c.sock\"\ncontrol_socket_mode = "
                               "\"0660\"\ncontrol_socket_owner = \"root\"\n"
                               "allow_loopback_control = false"));
  std::string dump = dump_config(c);
  EXPECT_NE(dump.find("token_file = '" + path + "'"), std::string::npos) << dump;
  EXPECT_NE(dump.find("control_socket = '/run/c.sock'"), std::string::npos) << dump;
  EXPECT_NE(dump.find("control_socket_mode = '0660'"), std::string::npos) << dump;
  EXPECT_NE(dump.find("control_socket_owner = 'root'"), std::string::npos) << dump;
  EXPECT_NE(dump.find("allow_loopback_control = false"), std::string::npos) << dump;
  EXPECT_EQ(dump.find("the-secret-token"), std::string::npos) << dump;
  // And it loads again to the same.
  EXPECT_EQ(dump_config(loaded(dump)), dump);
}

TEST_F(ConfigAdmin, AReloadAppliesTheTokenButNotTheControlSocket) {
  Config old = loaded(with_admin("control_socket = \"/run/c.sock\""));
  std::string path = token_file("0123456789abcdef0123\n", 0600);
  Config next = loaded(with_admin("control_socket = \"/run/d.sock\"\ncontrol_socket_mode = "
                                  "\"0660\"\ncontrol_socket_owner = \"root\"\ntoken_file = \"" +
                                  path + "\"\nallow_loopback_control = false"));
  auto changes = restart_only_changes(old, next);
  EXPECT_EQ(changes, (std::vector<std::string>{"[admin] control_socket changed",
                                               "[admin] control_socket_mode changed",
                                               "[admin] control_socket_owner changed"}));
}

} // namespace
} // namespace portico::config
