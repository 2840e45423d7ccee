// The record format and the ack log the power-cut harness relies on: a
// check that passed a damaged record or an ack log that dropped a line
// would let the harness miss a loss.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "tests/powercut/ack_log.h"
#include "tests/powercut/record.h"

namespace powercut {
namespace {

using Record = std::array<std::byte, kRecordSize>;

Record Encoded(uint64_t seq, uint32_t cycle) {
    Record r;
    EncodeRecord(seq, cycle, r);
    return r;
}

TEST(Record, EncodedRecordChecksIntact) {
    EXPECT_EQ(CheckRecord(Encoded(7, 3), 7, 3), SlotState::kIntact);
}

TEST(Record, ZeroSlotIsEmpty) {
    Record zero{};
    EXPECT_EQ(CheckRecord(zero, 7, 3), SlotState::kEmpty);
}

TEST(Record, AnyFlippedBitIsDamaged) {
    for (size_t i = 0; i < kRecordSize; i++) {
        Record r = Encoded(42, 1);
        r[i] ^= std::byte{0x10};
        EXPECT_EQ(CheckRecord(r, 42, 1), SlotState::kDamaged) << "byte " << i;
    }
}

TEST(Record, TornRecordIsDamaged) {
    // The first half of the record written, the rest still zero.
    Record r = Encoded(9, 2);
    std::fill(r.begin() + kRecordSize / 2, r.end(), std::byte{0});
    EXPECT_EQ(CheckRecord(r, 9, 2), SlotState::kDamaged);
}

TEST(Record, AnotherSeqOrCycleIsDamaged) {
    EXPECT_EQ(CheckRecord(Encoded(9, 2), 10, 2), SlotState::kDamaged);
    EXPECT_EQ(CheckRecord(Encoded(9, 2), 9, 3), SlotState::kDamaged);
}

TEST(Record, PayloadsDifferBetweenRecords) {
    Record a = Encoded(1, 1), b = Encoded(2, 1);
    EXPECT_NE(std::vector<std::byte>(a.begin() + 24, a.end()),
              std::vector<std::byte>(b.begin() + 24, b.end()));
}

std::string TempPath(const std::string &name) {
    const char *dir = std::getenv("TEST_TMPDIR");
    return std::string(dir ? dir : "/tmp") + "/" + name;
}

TEST(AckLog, AppendedEventsReadBackInOrder) {
    std::string path = TempPath("appended.log");
    std::remove(path.c_str());
    {
        auto log = AckLog::Open(path);
        ASSERT_TRUE(log.ok()) << log.status().ToString();
        ASSERT_TRUE(log->Append(AckedRecord{1, 1}).ok());
        ASSERT_TRUE(log->Append(RegionChange{RegionChange::kCreateSent, "c-0", 1048576}).ok());
        ASSERT_TRUE(log->Append(RegionChange{RegionChange::kDeleted, "c-0", 0}).ok());
    }
    auto reopened = AckLog::Open(path);  // appends, never truncates
    ASSERT_TRUE(reopened.ok());
    ASSERT_TRUE(reopened->Append(AckedRecord{2, 3}).ok());

    auto contents = ReadAckLog(path);
    ASSERT_TRUE(contents.ok()) << contents.status().ToString();
    ASSERT_EQ(contents->records.size(), 2u);
    EXPECT_EQ(contents->records[0].seq, 1u);
    EXPECT_EQ(contents->records[1].seq, 2u);
    EXPECT_EQ(contents->records[1].cycle, 3u);
    ASSERT_EQ(contents->changes.size(), 2u);
    EXPECT_EQ(contents->changes[0].kind, RegionChange::kCreateSent);
    EXPECT_EQ(contents->changes[0].name, "c-0");
    EXPECT_EQ(contents->changes[0].size, 1048576u);
    EXPECT_EQ(contents->changes[1].kind, RegionChange::kDeleted);
}

TEST(AckLog, LineWithoutNewlineIsNotComplete) {
    std::string path = TempPath("torn.log");
    std::ofstream(path) << "R 1 1\nR 2";
    auto contents = ReadAckLog(path);
    ASSERT_TRUE(contents.ok());
    ASSERT_EQ(contents->records.size(), 1u);
    EXPECT_EQ(contents->records[0].seq, 1u);
}

TEST(AckLog, MalformedLineIsAnErrorNamingIt) {
    std::string path = TempPath("malformed.log");
    std::ofstream(path) << "R 1 1\nR x 1\n";
    auto contents = ReadAckLog(path);
    ASSERT_FALSE(contents.ok());
    EXPECT_NE(contents.status().message().find("malformed.log:2"), std::string::npos)
        << contents.status().message();
}

TEST(AckLog, MissingFileHasNoEvents) {
    auto contents = ReadAckLog(TempPath("never-written.log"));
    ASSERT_TRUE(contents.ok());
    EXPECT_TRUE(contents->records.empty());
    EXPECT_TRUE(contents->changes.empty());
}

TEST(AckLog, OpenInMissingDirectorySaysWhich) {
    auto log = AckLog::Open(TempPath("no-such-dir/x.log"));
    ASSERT_FALSE(log.ok());
    EXPECT_NE(log.status().message().find("no-such-dir"), std::string::npos);
}

}  // namespace
}  // namespace powercut
