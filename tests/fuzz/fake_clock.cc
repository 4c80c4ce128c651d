#include "fake_clock.h"

#include <dlfcn.h>
#include <sys/time.h>
#include <time.h>

namespace portico::fuzz::fake_clock {
namespace {
thread_local bool on = false;
double fake_now = 1.0e9; // a plausible date: HTTP dates and log lines stay well formed
} // namespace

Session::Session() {
  on = true;
}
Session::~Session() {
  on = false;
}
void advance(double seconds) {
  fake_now += seconds;
}
double now() {
  return fake_now;
}

} // namespace portico::fuzz::fake_clock

// Interposes libc's: the executable's definition is the one every library resolves to.
extern "C" int clock_gettime(clockid_t id, struct timespec* ts) {
  using portico::fuzz::fake_clock::now;
  if (portico::fuzz::fake_clock::on &&
      (id == CLOCK_MONOTONIC || id == CLOCK_MONOTONIC_COARSE || id == CLOCK_MONOTONIC_RAW ||
       id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE || id == CLOCK_BOOTTIME)) {
    double t = now();
    ts->tv_sec = static_cast<time_t>(t);
    ts->tv_nsec = static_cast<long>((t - static_cast<double>(ts->tv_sec)) * 1e9);
    return 0;
  }
  using Real = int (*)(clockid_t, struct timespec*);
  static Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "clock_gettime"));
  return real(id, ts);
}

// libev reads the wall clock (ev_now) through it.
extern "C" int gettimeofday(struct timeval* tv, void* tz) {
  if (portico::fuzz::fake_clock::on && tv) {
    double t = portico::fuzz::fake_clock::now();
    tv->tv_sec = static_cast<time_t>(t);
    tv->tv_usec = static_cast<suseconds_t>((t - static_cast<double>(tv->tv_sec)) * 1e6);
    return 0;
  }
  using Real = int (*)(struct timeval*, void*);
  static Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "gettimeofday"));
  return real(tv, tz);
}
