// Tests: tcp_connection_timer_test, and through connections
// tcp_hostile_handshake_test, tcp_messaging_test (receiver not ready).
#include "rpma_core/src/provider/tcp/tcp_connection_timer.h"

#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "rpma_core/src/log.h"

namespace rpma::provider::tcp {

int ConnectionTimer::Ensure(ProgressEngine &engine, std::shared_ptr<EventHandler> handler) {
    if (fd_.Valid())
        return 0;
    UniqueFd timer(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    if (!timer.Valid()) {
        const int err = errno;
        RPMA_LOG_ERROR("cannot create a connection timer: %s", strerror(err));
        return err;
    }
    const int err = engine.Add(timer.Get(), EPOLLIN, std::move(handler), &token_);
    if (err != 0)
        return err;
    fd_ = std::move(timer);
    return 0;
}

void ConnectionTimer::Arm(Purpose purpose, int milliseconds) {
    if (!fd_.Valid())
        return;
    itimerspec spec{};
    spec.it_value.tv_sec = milliseconds / 1000;
    spec.it_value.tv_nsec = static_cast<long>(milliseconds % 1000) * 1000000L;
    if (milliseconds <= 0)
        spec.it_value.tv_nsec = 1;  // zero would disarm
    timerfd_settime(fd_.Get(), 0, &spec, nullptr);
    purpose_ = purpose;
}

void ConnectionTimer::Disarm(Purpose purpose) {
    if (purpose_ != purpose || !fd_.Valid())
        return;
    itimerspec spec{};
    timerfd_settime(fd_.Get(), 0, &spec, nullptr);
    purpose_ = Purpose::kNone;
}

ConnectionTimer::Purpose ConnectionTimer::Fire() {
    uint64_t expirations;
    if (read(fd_.Get(), &expirations, sizeof(expirations)) != sizeof(expirations))
        return Purpose::kNone;
    return std::exchange(purpose_, Purpose::kNone);
}

void ConnectionTimer::Close(ProgressEngine &engine) {
    if (fd_.Valid()) {
        engine.Remove(token_, fd_.Get());
        fd_.Reset();
    }
    purpose_ = Purpose::kNone;
}

}  // namespace rpma::provider::tcp
