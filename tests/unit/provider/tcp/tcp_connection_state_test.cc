// The connection's state machine (tcp_connection_state.h): the moves a
// connection makes in its life are allowed, and nothing else is. Connection
// checks every move against this table in debug builds, so the provider's
// own tests (every handshake, disconnect and failure they drive) also check
// that the table tells the whole story.
#include "rpma_core/src/provider/tcp/tcp_connection_state.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace rpma::provider::tcp {
namespace {

using State = ConnectionState;

constexpr State kAll[] = {
    State::kIdle,          State::kConnecting,  State::kAwaitingReply, State::kAwaitingRequest,
    State::kRequestQueued, State::kAwaitingRtu, State::kEstablished,   State::kDisconnecting,
    State::kClosing,       State::kClosed,
};

void ExpectPath(const std::vector<State> &path) {
    for (size_t i = 1; i < path.size(); ++i) {
        EXPECT_TRUE(IsConnectionMove(path[i - 1], path[i]))
            << ConnectionStateName(path[i - 1]) << " -> " << ConnectionStateName(path[i]);
    }
}

TEST(TcpConnectionState, TheLivesOfAConnectionAreAllowed) {
    // Active: connect, talk, say goodbye.
    ExpectPath({State::kIdle, State::kConnecting, State::kAwaitingReply, State::kEstablished,
                State::kDisconnecting, State::kClosed});
    // Passive: a request, accepted, confirmed, broken by a NAK.
    ExpectPath({State::kAwaitingRequest, State::kRequestQueued, State::kAwaitingRtu,
                State::kEstablished, State::kClosing, State::kClosed});
    // Refused: rejected by the server, or the request rejected.
    ExpectPath({State::kIdle, State::kConnecting, State::kAwaitingReply, State::kClosed});
    ExpectPath({State::kAwaitingRequest, State::kRequestQueued, State::kClosing, State::kClosed});
}

TEST(TcpConnectionState, EveryLivingStateMayDieAndClosedIsTheEnd) {
    for (State from : kAll) {
        EXPECT_TRUE(IsConnectionMove(from, State::kClosed)) << ConnectionStateName(from);
        if (from != State::kClosed) {
            EXPECT_TRUE(IsConnectionMove(from, State::kClosing)) << ConnectionStateName(from);
        }
    }
    for (State to : kAll) {
        if (to != State::kClosed) {
            EXPECT_FALSE(IsConnectionMove(State::kClosed, to)) << ConnectionStateName(to);
        }
    }
}

TEST(TcpConnectionState, NoStepOfTheHandshakeIsSkippedOrTakenBack) {
    EXPECT_FALSE(IsConnectionMove(State::kIdle, State::kEstablished));
    EXPECT_FALSE(IsConnectionMove(State::kConnecting, State::kEstablished));
    EXPECT_FALSE(IsConnectionMove(State::kAwaitingRequest, State::kEstablished));
    EXPECT_FALSE(IsConnectionMove(State::kRequestQueued, State::kEstablished));
    EXPECT_FALSE(IsConnectionMove(State::kEstablished, State::kAwaitingReply));
    EXPECT_FALSE(IsConnectionMove(State::kDisconnecting, State::kEstablished));
    EXPECT_FALSE(IsConnectionMove(State::kClosing, State::kEstablished));
    // An active connection never takes the passive path, nor the reverse.
    EXPECT_FALSE(IsConnectionMove(State::kAwaitingReply, State::kAwaitingRtu));
    EXPECT_FALSE(IsConnectionMove(State::kAwaitingRequest, State::kAwaitingReply));
}

TEST(TcpConnectionState, EachStateHasItsOwnName) {
    std::set<std::string> names;
    for (State state : kAll)
        names.insert(ConnectionStateName(state));
    EXPECT_EQ(names.size(), std::size(kAll));
    EXPECT_EQ(names.count("unknown"), 0u);
}

}  // namespace
}  // namespace rpma::provider::tcp
