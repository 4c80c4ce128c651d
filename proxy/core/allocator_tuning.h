#pragma once
// glibc malloc settings for a long-running server: a worker thread's arena otherwise grows and
// shrinks its heap with mprotect(2) as bursts of requests come and go (thousands of calls per
// second under load, measured with strace), and the main arena does the same with brk(2).
namespace portico::core {

// Call once, before any thread starts.
void tune_allocator();

} // namespace portico::core
