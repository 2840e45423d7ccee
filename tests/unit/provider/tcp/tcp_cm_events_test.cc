// CmEvents (tcp_cm_events.h): the events come out in order, the fd is
// readable exactly while one waits, and a connection ends once.
#include "rpma_core/src/provider/tcp/tcp_cm_events.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <cerrno>

namespace rpma::provider::tcp {
namespace {

bool Readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

CmEventType Next(CmEvents &events) {
    CmEvent event;
    EXPECT_EQ(events.Pop(&event), 0);
    return event.type;
}

TEST(CmEvents, InOrderWithThePrivateDataAndAReadableFd) {
    CmEvents events;
    ASSERT_TRUE(events.Valid());
    EXPECT_FALSE(Readable(events.Fd()));
    EXPECT_TRUE(events.Emit(CmEventType::kEstablished, {1, 2, 3}));
    EXPECT_TRUE(events.Emit(CmEventType::kDisconnected));
    EXPECT_TRUE(Readable(events.Fd()));
    CmEvent event;
    ASSERT_EQ(events.Pop(&event), 0);
    EXPECT_EQ(event.type, CmEventType::kEstablished);
    EXPECT_EQ(event.private_data, (std::vector<uint8_t>{1, 2, 3}));
    EXPECT_EQ(Next(events), CmEventType::kDisconnected);
    EXPECT_FALSE(Readable(events.Fd()));
    EXPECT_EQ(events.Pop(&event), EAGAIN);
}

TEST(CmEvents, OnlyTheFirstFailureIsReported) {
    CmEvents events;
    EXPECT_TRUE(events.Emit(CmEventType::kUnreachable));
    EXPECT_FALSE(events.Emit(CmEventType::kRejected));
    EXPECT_FALSE(events.Emit(CmEventType::kConnectError));
    EXPECT_EQ(Next(events), CmEventType::kUnreachable);
    CmEvent event;
    EXPECT_EQ(events.Pop(&event), EAGAIN);
}

TEST(CmEvents, DisconnectedOnceEvenAfterAFailure) {
    CmEvents events;
    EXPECT_TRUE(events.Emit(CmEventType::kConnectError));
    EXPECT_TRUE(events.Emit(CmEventType::kDisconnected));
    EXPECT_FALSE(events.Emit(CmEventType::kDisconnected));
    EXPECT_FALSE(events.Emit(CmEventType::kConnectError)) << "ended already";
    EXPECT_EQ(Next(events), CmEventType::kConnectError);
    EXPECT_EQ(Next(events), CmEventType::kDisconnected);
    CmEvent event;
    EXPECT_EQ(events.Pop(&event), EAGAIN);
}

}  // namespace
}  // namespace rpma::provider::tcp
