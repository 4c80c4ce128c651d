// The admin endpoint's Authorization parsing and token check (portico/admin_guard.h) on
// arbitrary field values: never a crash; a token found is a non-empty word without spaces
// taken from the value itself, which "Bearer TOKEN" gives back; the guard lets a
// state-changing request through only with exactly one field carrying the configured token.
#include "portico/admin_guard.h"

#include <cstdint>
#include <cstdlib>
#include <openssl/sha.h>
#include <string>
#include <string_view>

using namespace portico;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::optional<std::string_view> token = proxy::bearer_token(in);
  if (token) {
    if (token->empty() || token->find_first_of(" \t") != std::string_view::npos)
      std::abort();
    if (token->data() < in.data() || token->data() + token->size() > in.data() + in.size())
      std::abort();
    if (proxy::bearer_token("Bearer " + std::string(*token)) != *token)
      std::abort();
  }
  // The configured token is "right"; the input is the request's one Authorization value.
  config::AdminConfig admin;
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>("right"), 5, d);
  admin.access.token_sha256.assign(reinterpret_cast<const char*>(d), sizeof d);
  http::RequestHead head;
  head.method = "POST";
  head.target = "/cache/purge";
  head.headers.push_back({"authorization", in});
  auto refused = proxy::admin_refusal(admin, proxy::AdminPeer::OTHER, head);
  if (!refused != (token && *token == "right"))
    std::abort();
  return 0;
}
