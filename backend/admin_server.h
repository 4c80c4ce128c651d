#pragma once
// The master's admin listener (--admin HOST:PORT): GET and HEAD over HTTP/1.1, one request per
// connection, answered from the master's poll loop without ever blocking it. Every descriptor
// is non-blocking; a request head must fit in kMaxHead bytes and arrive, and its answer leave,
// within kTimeout; at most kMaxClients are served at once. A client that breaks a limit gets an
// error or is dropped, and is never waited for: supervision goes on whatever a client does.
#include <functional>
#include <poll.h>
#include <string>
#include <string_view>
#include <vector>

namespace portico::backend {

struct AdminRequest {
  std::string_view method;
  std::string_view path; // the target without its query
};

// Parses the request line of a head ("GET /metrics HTTP/1.1\r\n..."): 0 with *out set, or the
// status to answer with (400 malformed, 505 not HTTP/1.x).
int parse_admin_request(std::string_view head, AdminRequest* out);

struct AdminResponse {
  int status = 200;
  std::string content_type = "text/plain";
  std::string body;
};

class AdminServer {
public:
  // Called for GET and HEAD with the request's path.
  using Handler = std::function<AdminResponse(std::string_view path)>;

  static constexpr size_t kMaxHead = 8192;
  static constexpr size_t kMaxClients = 32;
  static constexpr int kAcceptsPerWakeup = 16;
  // Seconds from accept to read the head and write the answer.
  static constexpr double kTimeout = 5;
  // After the answer: seconds, and bytes at most, of input read and dropped before the close.
  static constexpr double kLinger = 1;
  static constexpr size_t kMaxDiscard = 64 * 1024;

  explicit AdminServer(Handler handler) : handler_(std::move(handler)) {}
  ~AdminServer();
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // Binds "HOST:PORT" (or "unix:/path"); false with *error set.
  bool listen(const std::string& address, std::string* error);

  // The descriptors to watch, appended to fds; then, after poll(), on_poll with a pointer to
  // the first of them. on_poll also drops clients past their deadline, so call it after every
  // poll, timed out or not.
  void add_pollfds(std::vector<pollfd>& fds);
  void on_poll(const pollfd* fds, double now);
  // Milliseconds until the next client deadline, or -1 when no client is connected.
  int timeout_ms(double now) const;

  // In a forked worker: the master's descriptors closed, nothing else touched.
  void close_fds();
  size_t client_count() const { return clients_.size(); }

private:
  enum class State {
    READING,   // the request head is arriving
    WRITING,   // the answer is being written
    LINGERING, // answered and shut down for writing: input is read and dropped until EOF, so
               // that closing does not reset the connection under the answer
  };
  struct Client {
    int fd = -1;
    State state = State::READING;
    std::string buf; // the request head, then the answer
    size_t sent = 0;
    size_t discarded = 0;
    double deadline = 0;
  };

  void on_readable(Client& c, double now);
  void answer(Client& c, double now);
  void write_out(Client& c, double now);
  void drop(Client& c);
  void accept_clients(double now);

  Handler handler_;
  int listen_fd_ = -1;
  std::string unix_path_;
  std::vector<Client> clients_;
  size_t polled_ = 0; // clients whose descriptors add_pollfds appended
};

} // namespace portico::backend
