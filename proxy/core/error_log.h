#pragma once
// The error log ([log] level and file): one line per event, "TIME [level] THREAD: message",
// written with one write(2) so that lines from worker threads never interleave. Events of one
// kind about one subject (a cluster) are said at most once a second; the ones held back are
// counted into the next such line, so a flood (every request to a dead upstream) cannot fill a
// disk, and one cluster's flood hides no other cluster's line. Under systemd
// (JOURNAL_STREAM set) each line starts with its sd-daemon priority, "<4>", for journald.
// Off the request path: it is called when something went wrong, never per request.
#include <cstdarg>
#include <string_view>

namespace portico::core::log {

enum class Level { DEBUG, INFO, WARN, ERROR };

// What is rate-limited together.
enum class Kind {
  GENERAL,          // lifecycle: started, stopped, reloaded (never held back)
  UPSTREAM_CONNECT, // a connect to an upstream endpoint failed
  ENDPOINT_DOWN,    // an endpoint held down after a failed connect
  ENDPOINT_UP,      // ...and up again (a kind of its own: an up must not hide behind a down)
  DNS,              // a name did not resolve
  TLS_HANDSHAKE,    // a client's handshake failed
  PROXY_HEADER,     // a client's PROXY protocol header was missing or malformed
  LIMIT,            // a limit was hit: connections, buffers, descriptors
  REQUEST_FAILED,   // a request answered 502, 503 or 504 for its upstream's failure (or reset)
  STATIC_FILE,      // a static file changed or failed while it was being sent
  CACHE_DISK,       // a disk cache could not write or read a file
  LIMIT_STORE,      // a shared limit's Redis connection failed, or Redis answered an error
  ADMIN_REFUSED,    // an admin request that would change state was refused (403)
  COUNT
};

const char* to_string(Level l);
// "debug", "info", "warn", "error"; false for anything else.
bool parse_level(const char* text, Level* out);

// Where lines go and from which level. fd: stderr's 2 until configured; journal: prefix each
// line with its priority. Called by the main thread before the workers start (and on reopen).
void configure(Level min, int fd, bool journal);
// Names the calling thread in its lines ("main", "worker 2"): a string that outlives it.
void set_thread_name(const char* name);
bool enabled(Level l);
// The descriptor lines go to (what USR1 reopens when it is a file).
int fd();
void write(Level l, Kind k, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
// The same, rate-limited apart for each subject (a cluster's name): two clusters failing in
// one second are both named.
void write_about(Level l, Kind k, std::string_view subject, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

} // namespace portico::core::log
