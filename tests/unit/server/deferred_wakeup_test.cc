// One deferral queue per loop (issue 9, defect 9): an answer queued by deferred work (as an
// upstream's flush or a refused h2c stream queue one) reaches the client in the same loop
// iteration, not when some unrelated event next wakes the loop. Built as a proxy worker is: the
// worker's DeferredQueue, then a ServerContext on the same loop.
#include "core/deferred_queue.h"
#include "server/exchange.h"
#include "server/server_context.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <ev.h>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::server {
namespace {

// Answers every request from the deferral queue, never from its own callback.
struct DeferredAnswer : RequestHandler, core::Deferred {
  explicit DeferredAnswer(core::DeferredQueue*& queue) : queue(queue) {}
  void on_request(Exchange& ex) override {
    pending = &ex;
    queue->add(this);
  }
  void run_deferred() override {
    if (pending)
      pending->respond(200, "text/plain", "deferred\n");
    pending = nullptr;
  }
  core::DeferredQueue*& queue;
  Exchange* pending = nullptr;
};

void timeout_cb(struct ev_loop* loop, ev_timer* w, int) {
  *static_cast<bool*>(w->data) = true;
  ev_break(loop, EVBREAK_ALL);
}

void answered_cb(struct ev_loop* loop, ev_io*, int) {
  ev_break(loop, EVBREAK_ALL);
}

TEST(DeferredWakeup, AnswerQueuedByDeferredWorkLeavesInTheSameIteration) {
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  core::DeferredQueue* queue = nullptr;
  DeferredAnswer handler(queue);
  {
    core::DeferredQueue deferred(loop);
    queue = &deferred;
    ServerContext ctx(loop, handler, ServerLimits{}, deferred);
    sockaddr_storage peer{};
    peer.ss_family = AF_UNIX;
    ctx.adopt(sv[0], nullptr, peer);
    const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(write(sv[1], req, sizeof req - 1), static_cast<ssize_t>(sizeof req - 1));

    // Nothing else will happen on this loop: with the defect it sleeps until this timer. The
    // answer arriving at the client's end stops the loop first.
    bool timed_out = false;
    ev_timer watchdog;
    ev_timer_init(&watchdog, timeout_cb, 2.0, 0);
    watchdog.data = &timed_out;
    ev_timer_start(loop, &watchdog);
    ev_io answered;
    ev_io_init(&answered, answered_cb, sv[1], EV_READ);
    ev_io_start(loop, &answered);
    ev_run(loop, 0);
    ev_io_stop(loop, &answered);
    ev_timer_stop(loop, &watchdog);
    char buf[512];
    ssize_t n = read(sv[1], buf, sizeof buf);
    ASSERT_FALSE(timed_out) << "the answer waited for an unrelated wakeup";
    ASSERT_GT(n, 15);
    EXPECT_EQ(std::string(buf, 15), "HTTP/1.1 200 OK");
    ctx.close_all();
  }
  close(sv[1]);
  ev_loop_destroy(loop);
}

} // namespace
} // namespace portico::server
