#include "daemon/session_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace rpmad {
namespace {

TEST(SessionTable, OpenGivesRandomTokensBoundToTheRegion) {
    SessionTable table(16, std::chrono::seconds(60));
    auto a = table.Open("a", 11);
    auto b = table.Open("a", 11);
    ASSERT_TRUE(a.ok());
    ASSERT_TRUE(b.ok());
    EXPECT_NE(a->token.session_id, b->token.session_id);
    EXPECT_NE(a->token.secret, b->token.secret);
    EXPECT_NE(a->token.secret, (std::array<uint8_t, 16>{}));
    EXPECT_EQ(a->region, "a");
    EXPECT_EQ(a->region_id, 11u);
    EXPECT_EQ(table.size(), 2u);
    EXPECT_EQ(table.CountForRegion("a"), 2u);
    EXPECT_EQ(table.CountForRegion("b"), 0u);
}

TEST(SessionTable, ATokenAdmitsOneConnectionOnly) {
    SessionTable table(16, std::chrono::seconds(60));
    auto grant = table.Open("a", 1);
    ASSERT_TRUE(grant.ok());
    auto redeemed = table.Redeem(grant->token, "127.0.0.1:5000");
    ASSERT_TRUE(redeemed.ok());
    EXPECT_EQ(redeemed->region, "a");
    auto again = table.Redeem(grant->token, "127.0.0.1:5001");
    EXPECT_EQ(again.status().code(), StatusCode::kUnauthenticated);
    EXPECT_NE(again.status().message().find("already used"), std::string::npos);
    const auto list = table.List("");
    ASSERT_EQ(list.size(), 1u);
    EXPECT_TRUE(list[0].connected);
    EXPECT_EQ(list[0].peer, "127.0.0.1:5000");
}

TEST(SessionTable, AWrongSecretOrUnknownSessionIsUnauthenticated) {
    SessionTable table(16, std::chrono::seconds(60));
    auto grant = table.Open("a", 1);
    ASSERT_TRUE(grant.ok());
    for (size_t byte = 0; byte < 16; ++byte) {
        auto wrong = grant->token;
        wrong.secret[byte] ^= 0x80;
        auto redeemed = table.Redeem(wrong, "p");
        EXPECT_EQ(redeemed.status().code(), StatusCode::kUnauthenticated);
        EXPECT_NE(redeemed.status().message().find("wrong token"), std::string::npos);
    }
    auto unknown = grant->token;
    unknown.session_id ^= 1;
    EXPECT_EQ(table.Redeem(unknown, "p").status().code(), StatusCode::kUnauthenticated);
    // Failed attempts do not spend the token.
    EXPECT_TRUE(table.Redeem(grant->token, "p").ok());
}

TEST(SessionTable, ExpiredTokensAreRefusedAndPendingSessionsExpire) {
    SessionTable table(16, std::chrono::seconds(0));
    auto grant = table.Open("a", 1);
    ASSERT_TRUE(grant.ok());
    EXPECT_TRUE(table.NextExpiry().has_value());
    auto redeemed = table.Redeem(grant->token, "p");
    EXPECT_EQ(redeemed.status().code(), StatusCode::kUnauthenticated);
    EXPECT_NE(redeemed.status().message().find("expired"), std::string::npos);
    EXPECT_EQ(table.size(), 0u);

    auto pending = table.Open("a", 1);
    ASSERT_TRUE(pending.ok());
    const auto expired = table.ExpirePending();
    ASSERT_EQ(expired.size(), 1u);
    EXPECT_EQ(expired[0], pending->token.session_id);
    EXPECT_FALSE(table.NextExpiry().has_value());
}

TEST(SessionTable, ConnectedSessionsDoNotExpire) {
    SessionTable table(16, std::chrono::seconds(60));
    auto grant = table.Open("a", 1);
    ASSERT_TRUE(grant.ok());
    ASSERT_TRUE(table.Redeem(grant->token, "p").ok());
    EXPECT_TRUE(table.ExpirePending().empty());
    EXPECT_FALSE(table.NextExpiry().has_value());
}

TEST(SessionTable, TheLimitIsResourceExhausted) {
    SessionTable table(2, std::chrono::seconds(60));
    ASSERT_TRUE(table.Open("a", 1).ok());
    auto second = table.Open("b", 2);
    ASSERT_TRUE(second.ok());
    auto third = table.Open("a", 1);
    EXPECT_EQ(third.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(third.status().message().find("limits.max_sessions"), std::string::npos);
    auto closed = table.Close(second->token.session_id);
    ASSERT_TRUE(closed.ok());
    EXPECT_FALSE(*closed);
    EXPECT_TRUE(table.Open("a", 1).ok());
}

TEST(SessionTable, CloseAndCloseRegion) {
    SessionTable table(16, std::chrono::seconds(60));
    auto a1 = table.Open("a", 1);
    auto a2 = table.Open("a", 1);
    auto b = table.Open("b", 2);
    ASSERT_TRUE(a1.ok() && a2.ok() && b.ok());
    ASSERT_TRUE(table.Redeem(a1->token, "p").ok());
    auto closed = table.Close(a1->token.session_id);
    ASSERT_TRUE(closed.ok());
    EXPECT_TRUE(*closed);  // it was connected
    EXPECT_EQ(table.Close(a1->token.session_id).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(table.CloseRegion("a"), std::vector<uint64_t>{a2->token.session_id});
    EXPECT_EQ(table.size(), 1u);
    EXPECT_EQ(table.List("b").size(), 1u);
    EXPECT_TRUE(table.List("a").empty());
}

TEST(SessionTable, FlushesAreCountedPerSession) {
    SessionTable table(16, std::chrono::seconds(60));
    auto grant = table.Open("a", 1);
    ASSERT_TRUE(grant.ok());
    table.CountFlush(grant->token.session_id, 100);
    table.CountFlush(grant->token.session_id, 28);
    table.CountFlush(grant->token.session_id + 1, 5);  // unknown: ignored
    const auto list = table.List("a");
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0].flushes, 2u);
    EXPECT_EQ(list[0].bytes_flushed, 128u);
}

TEST(SecretsEqual, ComparesEveryByte) {
    std::array<uint8_t, 16> a{}, b{};
    EXPECT_TRUE(SecretsEqual(a, b));
    for (size_t i = 0; i < 16; ++i) {
        b = a;
        b[i] = 1;
        EXPECT_FALSE(SecretsEqual(a, b)) << i;
    }
}

}  // namespace
}  // namespace rpmad

namespace rpmad {
namespace {

TEST(SessionTable, APeerAtItsPendingQuotaIsRefusedNamingTheKeyAndOthersAreNot) {
    SessionTable table(16, std::chrono::seconds(60), SessionQuotas{0, 2});
    const Requester alice{"token:alice", "10.0.0.1"};
    const Requester alice_elsewhere{"token:alice", "10.0.0.2"};
    const Requester bob{"token:bob", "10.0.0.1"};
    auto first = table.Open("a", 1, alice);
    ASSERT_TRUE(first.ok());
    ASSERT_TRUE(table.Open("a", 1, alice).ok());
    auto refused = table.Open("a", 1, alice);
    EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(refused.status().message().find("sessions.max_pending_per_peer"), std::string::npos)
        << refused.status().message();
    EXPECT_NE(refused.status().message().find("token:alice from 10.0.0.1"), std::string::npos);
    // Another identity at the same address, and the same one elsewhere.
    EXPECT_TRUE(table.Open("a", 1, bob).ok());
    EXPECT_TRUE(table.Open("a", 1, alice_elsewhere).ok());
    // A connected session is no longer pending.
    ASSERT_TRUE(table.Redeem(first->token, "10.0.0.1:4000").ok());
    EXPECT_TRUE(table.Open("a", 1, alice).ok());
    const auto list = table.List("");
    EXPECT_EQ(
        std::count_if(list.begin(), list.end(),
                      [](const SessionInfo &info) { return info.opener.identity == "token:bob"; }),
        1);
}

TEST(SessionTable, AnIdentityAtItsQuotaIsRefusedNamingTheKeyAndOthersAreNot) {
    SessionTable table(16, std::chrono::seconds(60), SessionQuotas{3, 0});
    const Requester alice{"token:alice", "10.0.0.1"};
    for (int i = 0; i < 3; ++i) {
        auto grant = table.Open("a", 1, Requester{alice.identity, "10.0.0." + std::to_string(i)});
        ASSERT_TRUE(grant.ok());
        ASSERT_TRUE(table.Redeem(grant->token, "p").ok());
    }
    auto refused = table.Open("a", 1, alice);
    EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(refused.status().message().find("sessions.max_per_identity"), std::string::npos)
        << refused.status().message();
    EXPECT_TRUE(table.Open("a", 1, Requester{"token:bob", "10.0.0.1"}).ok());
    // Closing one makes room again.
    for (const SessionInfo &info : table.List(""))
        if (info.opener.identity == alice.identity && info.connected) {
            ASSERT_TRUE(table.Close(info.session_id).ok());
            break;
        }
    EXPECT_TRUE(table.Open("a", 1, alice).ok());
}

}  // namespace
}  // namespace rpmad
