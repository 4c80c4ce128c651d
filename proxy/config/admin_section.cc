// [admin]: where the endpoint listens, its control socket, and who may change state through it.
#include "config/sections.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fcntl.h>
#include <grp.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/un.h>

namespace portico::config {

namespace {

constexpr const char* kWhere = "[admin]";
// One token, with room for a trailing newline and more: a file larger is not a token file.
constexpr size_t kMaxTokenFileBytes = 4096;
// Below this a token may be guessed; 32 random bytes in hex is what the README suggests.
constexpr size_t kShortToken = 16;

// A user or group given by name or number: its id, or nullopt when there is none.
template <typename Lookup> std::optional<int> id_of(std::string_view text, Lookup lookup) {
  int id = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec == std::errc() && end == text.data() + text.size() && id >= 0)
    return id;
  return lookup(std::string(text));
}

std::optional<int> user_id(const std::string& name) {
  passwd pw, *found = nullptr;
  char buf[16384];
  if (::getpwnam_r(name.c_str(), &pw, buf, sizeof buf, &found) != 0 || !found)
    return std::nullopt;
  return static_cast<int>(found->pw_uid);
}

std::optional<int> group_id(const std::string& name) {
  group gr, *found = nullptr;
  char buf[16384];
  if (::getgrnam_r(name.c_str(), &gr, buf, sizeof buf, &found) != 0 || !found)
    return std::nullopt;
  return static_cast<int>(found->gr_gid);
}

std::string octal(int mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode));
  return buf;
}

void read_control_socket(Reader& r, const toml::table& a, AdminConfig& admin) {
  std::string path;
  bool has_path = r.get_string(a, "control_socket", path, kWhere);
  for (const char* key : {"control_socket_mode", "control_socket_owner"})
    if (a.get(key) && !has_path)
      r.error(a.get(key)->source(),
              std::string(kWhere) + ": '" + key + "' needs a control_socket to apply to");
  if (!has_path)
    return;
  core::ListenAddress& s = admin.control_socket;
  s.kind = core::ListenAddress::Kind::UNIX;
  s.path = path;
  s.text = "unix:" + path;
  s.mode = 0600;
  if (path.empty() || path[0] != '/')
    r.error(a.get("control_socket")->source(),
            std::string(kWhere) + ": control_socket must be an absolute path: '" + path + "'");
  else if (path.size() >= sizeof(sockaddr_un::sun_path))
    r.error(a.get("control_socket")->source(),
            std::string(kWhere) + ": control_socket is " + std::to_string(path.size()) +
                " bytes; at most " + std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " fit");
  std::string mode;
  if (r.get_string(a, "control_socket_mode", mode, kWhere)) {
    int m = -1;
    auto [end, ec] = std::from_chars(mode.data(), mode.data() + mode.size(), m, 8);
    const toml::node* at = a.get("control_socket_mode");
    if (mode.empty() || ec != std::errc() || end != mode.data() + mode.size() || m < 0 || m > 0777)
      r.error(at->source(), std::string(kWhere) +
                                ": control_socket_mode is an octal mode from \"0000\" to \"0777\" "
                                "as a string (\"0600\"), got '" +
                                mode + "'");
    else if (m & S_IWOTH) // connect(2) on a unix socket needs write permission
      r.error(at->source(), std::string(kWhere) + ": control_socket_mode " + octal(m) +
                                " lets every user connect, and so change state: use \"0600\", "
                                "or \"0660\" with control_socket_owner's group");
    else
      s.mode = m;
  }
  if (r.get_string(a, "control_socket_owner", admin.control_socket_owner, kWhere)) {
    const std::string& owner = admin.control_socket_owner;
    size_t colon = owner.find(':');
    std::string_view user = std::string_view(owner).substr(0, colon);
    std::string_view grp =
        colon == std::string::npos ? std::string_view{} : std::string_view(owner).substr(colon + 1);
    const toml::node* at = a.get("control_socket_owner");
    std::optional<int> uid = user.empty() ? std::optional<int>(-1) : id_of(user, user_id);
    std::optional<int> gid = grp.empty() ? std::optional<int>(-1) : id_of(grp, group_id);
    if (owner.empty() || (user.empty() && grp.empty()))
      r.error(at->source(), std::string(kWhere) +
                                ": control_socket_owner is \"USER\", \"USER:GROUP\" or \":GROUP\" "
                                "(names or numbers)");
    else if (!uid)
      r.error(at->source(),
              std::string(kWhere) + ": control_socket_owner: no user '" + std::string(user) + "'");
    else if (!gid)
      r.error(at->source(),
              std::string(kWhere) + ": control_socket_owner: no group '" + std::string(grp) + "'");
    else {
      s.uid = *uid;
      s.gid = *gid;
    }
  }
}

// The token in file (surrounding whitespace trimmed), as its SHA-256 into sha256.
void read_token_file(Reader& r, const toml::node* at, const std::string& file,
                     std::string& sha256) {
  auto refuse = [&](const std::string& why) {
    r.error(at->source(), std::string(kWhere) + ": token_file '" + file + "' " + why);
  };
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    refuse(std::string("cannot be read: ") + std::strerror(errno));
    return;
  }
  struct stat st;
  char buf[kMaxTokenFileBytes + 1];
  ssize_t n = -1;
  if (::fstat(fd, &st) != 0)
    refuse(std::string("cannot be read: ") + std::strerror(errno));
  else if (!S_ISREG(st.st_mode))
    refuse("is not a regular file");
  else if (st.st_mode & S_IROTH)
    refuse("is readable by every user (mode " + octal(st.st_mode & 0777) +
           "): chmod o-r it (0600, or 0640 with portico's group)");
  else if (st.st_mode & S_IWOTH)
    refuse("is writable by every user (mode " + octal(st.st_mode & 0777) + "): chmod o-w it");
  else if ((n = ::read(fd, buf, sizeof buf)) < 0)
    refuse(std::string("cannot be read: ") + std::strerror(errno));
  ::close(fd);
  if (n < 0)
    return;
  std::string_view token(buf, static_cast<size_t>(n));
  while (!token.empty() && std::string_view(" \t\r\n").find(token.back()) != std::string::npos)
    token.remove_suffix(1);
  while (!token.empty() && std::string_view(" \t\r\n").find(token.front()) != std::string::npos)
    token.remove_prefix(1);
  if (static_cast<size_t>(n) > kMaxTokenFileBytes)
    refuse("is over " + std::to_string(kMaxTokenFileBytes) + " bytes: it should hold one token");
  else if (token.empty())
    refuse("holds no token");
  else if (std::any_of(token.begin(), token.end(), [](char c) { return c <= ' ' || c > '~'; }))
    refuse("holds spaces or control characters inside its token: a bearer token is one word of "
           "visible ASCII");
  else {
    if (token.size() < kShortToken)
      r.warning(at->source(), std::string(kWhere) + ": token_file '" + file +
                                  "' holds a token of " + std::to_string(token.size()) +
                                  " bytes, which may be guessed: `openssl rand -hex 32` makes one");
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
    sha256.assign(reinterpret_cast<const char*>(digest), sizeof digest);
  }
  OPENSSL_cleanse(buf, sizeof buf);
}

} // namespace

void read_admin(Reader& r, const toml::table& root, Config& c) {
  c.admin.address = *core::parse_listen_address("127.0.0.1:9901");
  const toml::table* a = r.get_table(root, "admin", "top level");
  if (a) {
    r.only_keys(*a,
                {"address", "enabled", "control_socket", "control_socket_mode",
                 "control_socket_owner", "token_file", "allow_loopback_control"},
                kWhere);
    std::string addr;
    if (r.get_string(*a, "address", addr, kWhere)) {
      if (auto pa = core::parse_listen_address(addr))
        c.admin.address = *pa;
      else
        r.error(a->get("address")->source(), pa.error());
    }
    r.get_bool(*a, "enabled", c.admin.enabled, kWhere);
    read_control_socket(r, *a, c.admin);
    AdminAccess& access = c.admin.access;
    if (r.get_string(*a, "token_file", access.token_file, kWhere)) {
      access.token_file = r.resolve(access.token_file);
      read_token_file(r, a->get("token_file"), access.token_file, access.token_sha256);
    }
    r.get_bool(*a, "allow_loopback_control", access.allow_loopback_control, kWhere);
  }
  if (!c.admin.enabled)
    return;
  const toml::node* at = a && a->get("address") ? a->get("address") : &root;
  const toml::node* control_at = a ? a->get("control_socket") : nullptr;
  for (const auto& l : c.listeners) {
    if (core::same_socket(l.address, c.admin.address))
      r.error(at->source(), "[admin]: address '" + c.admin.address.text +
                                "' is also a listener's ('" + l.address.text + "')");
    if (control_at && core::same_socket(l.address, c.admin.control_socket))
      r.error(control_at->source(), "[admin]: control_socket '" + c.admin.control_socket.path +
                                        "' is also a listener's ('" + l.address.text + "')");
  }
  if (control_at && core::same_socket(c.admin.address, c.admin.control_socket))
    r.error(control_at->source(), "[admin]: control_socket '" + c.admin.control_socket.path +
                                      "' is the admin address itself: give it a path of its own");
}

} // namespace portico::config
