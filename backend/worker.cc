#include "worker.h"

#include "app_router.h"
#include "memcached_client.h"
#include "request_meter.h"
#include "server/accept_share.h"
#include "server/acceptor.h"
#include "server/server_context.h"
#include "server/static_files.h"
#include "shm_counter_table.h"

#include <csignal>
#include <cstdio>
#include <memory>
#include <random>
#include <unistd.h>

namespace portico::backend {

namespace {

class Worker {
public:
  Worker(const Options& opts, struct ev_loop* loop, CounterStore& store, StaticFiles* files,
         WorkerSlot* metrics, std::unique_ptr<server::AcceptShare> share)
      : opts_(opts), loop_(loop),
        meter_(metrics ? std::make_unique<RequestMeter>(*metrics) : nullptr),
        share_(std::move(share)), router_(store, files, meter_.get()),
        ctx_(loop, router_, limits(opts)) {
    ctx_.set_accept_share(share_.get());
    retire_after_ = pick_retire_count(opts);
    router_.on_each_request = [this] {
      if (retire_after_ > 0 && ++served_ >= retire_after_)
        stop();
    };
    ev_signal_init(&term_, signal_cb, SIGTERM);
    term_.data = this;
    ev_signal_start(loop_, &term_);
    ev_signal_init(&quit_, signal_cb, SIGQUIT);
    quit_.data = this;
    ev_signal_start(loop_, &quit_);
    // The master forks with these blocked; one that came before the watchers arrives now.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGQUIT);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    ev_init(&grace_, grace_cb);
    grace_.data = this;
  }

  bool listen(const std::vector<ListenSocket>& sockets) {
    for (const auto& s : sockets) {
      auto a = std::make_unique<server::Acceptor>(ctx_, s.fd);
      if (!a->ok())
        return false;
      a->start();
      acceptors_.push_back(std::move(a));
    }
    return true;
  }

  // Stops accepting; connections finish their exchanges (the last response on each says
  // "Connection: close"), then the loop ends.
  void stop() {
    if (stopping_)
      return;
    stopping_ = true;
    for (auto& a : acceptors_)
      a->stop();
    if (share_)
      share_->stop_accepting(); // the others must not leave connections to this one
    // The signal watchers stay: stopping the last one for a signal restores its default
    // action, and a second TERM (a HUP soon after a HUP, a stop during a restart) would then
    // kill this worker with its exchanges in flight. A repeated signal is a no-op here.
    grace_.repeat = opts_.graceful_timeout;
    ev_timer_again(loop_, &grace_);
    ev_unref(loop_); // the grace timer alone must not keep the loop alive
    ctx_.begin_drain([this] { ev_break(loop_, EVBREAK_ALL); });
  }

  ~Worker() {
    // On the way out: once the watchers are gone, a TERM or QUIT (the master repeating a stop
    // while this process still exits, which under a sanitizer's leak check takes a while)
    // would kill it by the default action and read as a crash. Blocked, it stays pending.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGQUIT);
    ::sigprocmask(SIG_BLOCK, &set, nullptr);
    if (stopping_)
      ev_ref(loop_);
    ev_timer_stop(loop_, &grace_);
    ev_signal_stop(loop_, &term_);
    ev_signal_stop(loop_, &quit_);
  }

private:
  static server::ServerLimits limits(const Options& o) {
    server::ServerLimits l;
    l.keepalive_timeout = o.keepalive_timeout;
    l.parser.max_body_bytes = o.max_body_bytes;
    l.h2_max_concurrent_streams = o.h2_max_streams;
    l.server_name = "portico-backend";
    return l;
  }
  static long pick_retire_count(const Options& o) {
    if (o.max_requests <= 0)
      return 0;
    long lo = o.min_requests > 0 ? o.min_requests : o.max_requests;
    std::mt19937 rng(static_cast<unsigned>(getpid()) ^ static_cast<unsigned>(time(nullptr)));
    return std::uniform_int_distribution<long>(lo, o.max_requests)(rng);
  }
  static void signal_cb(struct ev_loop*, ev_signal* w, int) {
    static_cast<Worker*>(w->data)->stop();
  }
  static void grace_cb(struct ev_loop* loop, ev_timer*, int) { ev_break(loop, EVBREAK_ALL); }

  const Options& opts_;
  struct ev_loop* loop_;
  std::unique_ptr<RequestMeter> meter_; // before ctx_: connections closed with it still report
  std::unique_ptr<server::AcceptShare> share_; // before ctx_, for the same reason
  AppRouter router_;
  server::ServerContext ctx_;
  std::vector<std::unique_ptr<server::Acceptor>> acceptors_;
  ev_signal term_, quit_;
  ev_timer grace_;
  long retire_after_ = 0;
  long served_ = 0;
  bool stopping_ = false;
};

} // namespace

int run_worker(const Options& opts, const std::vector<ListenSocket>& sockets, ShmCounterTable* shm,
               WorkerSlot* metrics, std::unique_ptr<server::AcceptShare> share) {
  struct ev_loop* loop = ev_default_loop(EVFLAG_AUTO);
  std::unique_ptr<MemcachedClient> mc;
  CounterStore* store = shm;
  if (!shm) {
    mc = std::make_unique<MemcachedClient>(loop, opts.store.substr(sizeof("memcached://") - 1));
    store = mc.get();
  }
  std::unique_ptr<StaticFiles> files;
  if (!opts.document_root.empty()) {
    files = std::make_unique<StaticFiles>(opts.document_root);
    if (!files->ok()) {
      std::fprintf(stderr, "portico-backend: document root %s not found\n",
                   opts.document_root.c_str());
      return kWorkerExitStartup;
    }
  }
  {
    Worker w(opts, loop, *store, files.get(), metrics, std::move(share));
    if (!w.listen(sockets)) {
      std::perror("portico-backend: epoll");
      return kWorkerExitStartup;
    }
    ev_run(loop, 0);
  }
  return kWorkerExitRetired;
}

} // namespace portico::backend
