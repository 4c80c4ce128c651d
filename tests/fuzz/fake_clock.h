#pragma once
// A clock the fuzz harness moves by hand. While it is on for a thread, that thread's
// clock_gettime (which libev, std::chrono and the proxy read) answers the fake time for the
// wall and monotonic clocks: timers fire when the input says, never because the machine was
// slow. Other threads (libFuzzer's watchdog) and the CPU clocks keep the real time.
namespace portico::fuzz::fake_clock {

// This thread reads the fake time while a Session lives: libFuzzer times each input on the
// same thread, with the real clock, around the harness.
class Session {
public:
  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};
void advance(double seconds);
double now();

} // namespace portico::fuzz::fake_clock
