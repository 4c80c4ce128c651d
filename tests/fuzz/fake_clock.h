#pragma once
// A clock the fuzz harness moves by hand. While it is on for a thread, that thread's
// clock_gettime (which libev, std::chrono and the proxy read) answers the fake time for the
// wall and monotonic clocks: timers fire when the input says, never because the machine was
// slow. Other threads (libFuzzer's watchdog) and the CPU clocks keep the real time.
namespace portico::fuzz::fake_clock {

void enable(); // this thread reads the fake time from now on
void advance(double seconds);
double now();

} // namespace portico::fuzz::fake_clock
