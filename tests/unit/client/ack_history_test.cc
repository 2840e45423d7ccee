// AckHistory: what a failed replica had not confirmed, named in its error.
#include "ack_history.h"

#include <gtest/gtest.h>

#include <set>

namespace rpma::client {
namespace {

Op Write(uint64_t offset) {
    return Op{Op::Kind::kWrite, offset, 4096};
}

TEST(AckHistory, NamesTheUnconfirmedFromFirstToLast) {
    AckHistory history(8);
    for (uint64_t seq = 1; seq <= 5; ++seq)
        history.Add(Write(seq * 4096), seq);
    // Confirmed up to seq 2: 3, 4 and 5 were not.
    const std::string said =
        history.Unconfirmed(0, [](const Op &, uint64_t seq) { return seq <= 2; });
    EXPECT_EQ(said,
              "; it had not confirmed 3 earlier operations that the quorum acknowledged without "
              "it, from write of 4096 bytes at 12288 to write of 4096 bytes at 20480");
    EXPECT_EQ(history.Unconfirmed(0, [](const Op &, uint64_t) { return true; }), "");
}

TEST(AckHistory, OneUnconfirmedIsNamedAlone) {
    AckHistory history(8);
    history.Add(Op{Op::Kind::kPersist, 0, 100}, 7);
    EXPECT_EQ(history.Unconfirmed(0, [](const Op &, uint64_t) { return false; }),
              "; it had not confirmed 1 earlier operation that the quorum acknowledged without "
              "it, persist of 100 bytes at 0");
}

TEST(AckHistory, OperationsBeforeTheReplicaJoinedAreNotItsToConfirm) {
    AckHistory history(8);
    for (uint64_t seq = 1; seq <= 4; ++seq)
        history.Add(Write(seq), seq);
    EXPECT_EQ(history.Unconfirmed(4, [](const Op &, uint64_t) { return false; }), "");
    EXPECT_NE(history.Unconfirmed(3, [](const Op &, uint64_t) { return false; }).find(" 1 earlier"),
              std::string::npos);
}

TEST(AckHistory, KeepsTheNewestAndSaysAtLeastWhenTheOldestKeptIsUnconfirmed) {
    AckHistory history(4);
    for (uint64_t seq = 1; seq <= 10; ++seq)
        history.Add(Write(seq * 4096), seq);
    std::set<uint64_t> asked;
    const std::string said = history.Unconfirmed(0, [&](const Op &, uint64_t seq) {
        asked.insert(seq);
        return false;
    });
    EXPECT_EQ(asked, (std::set<uint64_t>{7, 8, 9, 10}));  // only the newest four
    EXPECT_NE(said.find("at least 4 earlier operations"), std::string::npos) << said;
    // The oldest kept confirmed: exactly those after it.
    const std::string exact =
        history.Unconfirmed(0, [](const Op &, uint64_t seq) { return seq == 7; });
    EXPECT_NE(exact.find("confirmed 3 earlier"), std::string::npos) << exact;
    EXPECT_EQ(exact.find("at least"), std::string::npos) << exact;
}

}  // namespace
}  // namespace rpma::client
