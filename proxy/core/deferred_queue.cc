#include "core/deferred_queue.h"

#include <algorithm>

namespace portico::core {

DeferredQueue::DeferredQueue(struct ev_loop* loop) : loop_(loop) {
  ev_prepare_init(&prepare_, prepare_cb);
  prepare_.data = this;
  ev_prepare_start(loop_, &prepare_);
  ev_unref(loop_); // pending work alone does not keep the loop running
  ev_idle_init(&idle_, idle_cb);
  if (!ev_userdata(loop_))
    ev_set_userdata(loop_, this);
}

DeferredQueue::~DeferredQueue() {
  run();
  ev_idle_stop(loop_, &idle_);
  ev_ref(loop_);
  ev_prepare_stop(loop_, &prepare_);
  if (ev_userdata(loop_) == this)
    ev_set_userdata(loop_, nullptr);
}

void DeferredQueue::add(Deferred* d) {
  if (d->queued_)
    return;
  d->queued_ = true;
  items_.push_back(d);
}

void DeferredQueue::cancel(Deferred* d) {
  if (!d->queued_)
    return;
  d->queued_ = false;
  if (auto it = std::find(items_.begin(), items_.end(), d); it != items_.end())
    *it = nullptr;
  if (auto it = std::find(running_.begin(), running_.end(), d); it != running_.end())
    *it = nullptr;
}

void DeferredQueue::dispose(Disposable* d) {
  disposed_.push_back(d);
}

void DeferredQueue::prepare_cb(struct ev_loop*, ev_prepare* w, int) {
  static_cast<DeferredQueue*>(w->data)->run();
}

void DeferredQueue::run() {
  // Running an item may queue more (a flush lets a producer go on): a few rounds.
  for (int round = 0; round < 8 && !items_.empty(); ++round) {
    running_.swap(items_);
    for (size_t i = 0; i < running_.size(); ++i) {
      Deferred* d = running_[i];
      if (!d)
        continue;
      d->queued_ = false;
      running_[i] = nullptr;
      d->run_deferred();
    }
    running_.clear();
  }
  // A destructor may dispose of more (a connection's last stream): until none is left.
  while (!disposed_.empty()) {
    deleting_.swap(disposed_);
    for (Disposable* d : deleting_)
      delete d;
    deleting_.clear();
  }
  // Work queued in the last round has no watcher to bring the loop back: keep it from
  // sleeping until that work is done.
  if (items_.empty())
    ev_idle_stop(loop_, &idle_);
  else
    ev_idle_start(loop_, &idle_);
}

} // namespace portico::core
