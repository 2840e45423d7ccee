// A connection's one timer: a timerfd in the progress engine, armed for one
// purpose at a time (connect, handshake, receiver not ready, the linger of
// a goodbye). Arming for another purpose replaces the one before; disarming
// touches only its own purpose. Called under the connection's lock.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_CONNECTION_TIMER_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_CONNECTION_TIMER_H

#include <cstdint>
#include <memory>

#include "rpma_core/src/provider/tcp/tcp_progress_engine.h"
#include "rpma_core/src/provider/tcp/tcp_unique_fd.h"

namespace rpma::provider::tcp {

class ConnectionTimer {
  public:
    enum class Purpose { kNone, kConnect, kHandshake, kReceiverNotReady, kLinger };

    // Creates the timerfd and hands it to `engine` for `handler`, once.
    // 0 or an errno (logged).
    int Ensure(ProgressEngine &engine, std::shared_ptr<EventHandler> handler);
    // Whether `fd` (from the engine's OnEvents) is this timer's.
    bool Owns(int fd) const { return fd_.Valid() && fd == fd_.Get(); }
    // Fires after `milliseconds` (at once when <= 0) for `purpose`. Nothing
    // before Ensure.
    void Arm(Purpose purpose, int milliseconds);
    // Stops it if it is armed for `purpose`.
    void Disarm(Purpose purpose);
    Purpose Armed() const { return purpose_; }
    // On the fd's EPOLLIN: the purpose that fired, or kNone (disarmed or
    // re-armed meanwhile: nothing to read). The timer is disarmed after.
    Purpose Fire();
    // The timer leaves the engine and closes.
    void Close(ProgressEngine &engine);

  private:
    UniqueFd fd_;
    uint64_t token_ = 0;
    Purpose purpose_ = Purpose::kNone;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_CONNECTION_TIMER_H
