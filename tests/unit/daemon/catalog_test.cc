// The region catalog: its format, its checksum, and how it is replaced and
// recovered on real files.
#include "daemon/catalog.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/crc32c.h"
#include "tests/unit/daemon/scratch_tmpfs.h"

namespace rpmad {
namespace {

using ::rpmad::testing::FreshTestDirectory;
using ::rpmad::testing::ReadFileOrEmpty;
using ::rpmad::testing::ScratchTmpfs;
using ::rpmad::testing::WriteFile;

Catalog TwoRegions(uint64_t generation) {
    Catalog catalog;
    catalog.generation = generation;
    catalog.entries.push_back({"alpha", 4096, 0x0123456789abcdefull, 1700000000, "alpha.pmem", ""});
    catalog.entries.push_back({"b-2.x_y", 1ull << 40, 7, -5, "b-2.x_y.pmem", ""});
    return catalog;
}

// TwoRegions with a replica-set record on the second (any bytes: the
// catalog does not look inside), which makes the catalog format 2.
Catalog TwoRegionsWithARecord(uint64_t generation) {
    Catalog catalog = TwoRegions(generation);
    catalog.entries[1].replica_set = std::string("\x0a\x03set\x10\x07\0tail", 12);
    return catalog;
}

// A catalog as an rpmad before replica sets wrote it (format 1), built by
// hand so that the encoder's choice of version cannot hide a reader that
// lost it.
std::string FormatOneCatalog(const Catalog &catalog) {
    std::string out = "RPMADCAT";
    auto put = [&out](uint64_t value, int bytes) {
        for (int i = 0; i < bytes; i++) {
            out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
        }
    };
    put(1, 4);
    put(catalog.entries.size(), 4);
    put(catalog.generation, 8);
    for (const CatalogEntry &entry : catalog.entries) {
        put(entry.name.size(), 2);
        out += entry.name;
        put(entry.file_name.size(), 2);
        out += entry.file_name;
        put(entry.size, 8);
        put(entry.id, 8);
        put(static_cast<uint64_t>(entry.created_unix), 8);
    }
    put(Crc32c(out), 4);
    return out;
}

// Re-seals a hand-edited encoding with a valid checksum, so that a test
// reaches the checks behind it.
std::string Reseal(std::string bytes) {
    bytes.resize(bytes.size() - 4);
    uint32_t crc = Crc32c(bytes);
    for (int i = 0; i < 4; i++) {
        bytes.push_back(static_cast<char>((crc >> (8 * i)) & 0xFF));
    }
    return bytes;
}

void FlipByte(const std::string &path, size_t offset) {
    std::string bytes = ReadFileOrEmpty(path);
    ASSERT_LT(offset, bytes.size());
    bytes[offset] ^= 0x40;
    WriteFile(path, bytes);
}

TEST(Crc32cTest, MatchesTheCastagnoliCheckValue) {
    EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
    EXPECT_EQ(Crc32c(""), 0u);
}

TEST(CatalogFormatTest, EncodeDecodeRoundTrip) {
    for (const Catalog &catalog : {Catalog{}, TwoRegions(42), TwoRegionsWithARecord(43)}) {
        StatusOr<Catalog> decoded = DecodeCatalog(EncodeCatalog(catalog));
        ASSERT_TRUE(decoded.ok()) << decoded.status().message();
        EXPECT_EQ(*decoded, catalog);
    }
}

TEST(CatalogFormatTest, ReplicaSetRecordsMakeFormatTwoAndOnlyThen) {
    // Without records the catalog stays what an rpmad before replica sets
    // reads, so a pool that never used them can still go back to one.
    EXPECT_EQ(EncodeCatalog(TwoRegions(3)), FormatOneCatalog(TwoRegions(3)));
    const std::string bytes = EncodeCatalog(TwoRegionsWithARecord(3));
    EXPECT_EQ(bytes[8], 2);
    EXPECT_NE(bytes.find(TwoRegionsWithARecord(3).entries[1].replica_set), std::string::npos);
}

TEST(CatalogFormatTest, AFormatOneCatalogStillLoads) {
    const std::string dir = FreshTestDirectory();
    WriteFile(dir + "/catalog", FormatOneCatalog(TwoRegions(9)));
    StatusOr<LoadedCatalog> loaded = LoadCatalog(dir);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->source, LoadedCatalog::Source::kCurrent);
    EXPECT_EQ(loaded->catalog, TwoRegions(9));
    for (const CatalogEntry &entry : loaded->catalog.entries) {
        EXPECT_TRUE(entry.replica_set.empty()) << entry.name;
    }
    // The next commit with a record is format 2 and comes back whole.
    ASSERT_TRUE(CommitCatalog(dir, TwoRegionsWithARecord(10)).status.ok());
    loaded = LoadCatalog(dir);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->catalog, TwoRegionsWithARecord(10));
}

TEST(CatalogFormatTest, AnOversizedReplicaSetRecordIsDamage) {
    Catalog catalog = TwoRegions(3);
    catalog.entries[0].replica_set.assign(kMaxReplicaSetRecordBytes + 1, 'x');
    StatusOr<Catalog> decoded = DecodeCatalog(EncodeCatalog(catalog));
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.status().message().find("replica-set record of"), std::string::npos)
        << decoded.status().message();
}

TEST(CatalogFormatTest, EveryFlippedByteIsDetected) {
    const std::string bytes = EncodeCatalog(TwoRegionsWithARecord(3));
    for (size_t i = 0; i < bytes.size(); i++) {
        std::string damaged = bytes;
        damaged[i] ^= 0x01;
        StatusOr<Catalog> decoded = DecodeCatalog(damaged);
        ASSERT_FALSE(decoded.ok()) << "flipped byte " << i << " went unnoticed";
        EXPECT_EQ(decoded.status().code(), StatusCode::kFailedPrecondition);
    }
}

TEST(CatalogFormatTest, EveryTruncationIsDetected) {
    const std::string bytes = EncodeCatalog(TwoRegionsWithARecord(3));
    for (size_t length = 0; length < bytes.size(); length++) {
        EXPECT_FALSE(DecodeCatalog(bytes.substr(0, length)).ok()) << "length " << length;
    }
}

TEST(CatalogFormatTest, ChecksumMismatchIsNamed) {
    std::string bytes = EncodeCatalog(TwoRegions(3));
    bytes[20] ^= 0x10;
    StatusOr<Catalog> decoded = DecodeCatalog(bytes);
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.status().message().find("checksum mismatch"), std::string::npos)
        << decoded.status().message();
}

TEST(CatalogFormatTest, BadMagicIsRejected) {
    std::string bytes = EncodeCatalog(TwoRegions(3));
    bytes[0] = 'X';
    StatusOr<Catalog> decoded = DecodeCatalog(Reseal(bytes));
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.status().message().find("magic"), std::string::npos);
}

TEST(CatalogFormatTest, UnknownVersionIsRejected) {
    std::string bytes = EncodeCatalog(TwoRegions(3));
    bytes[8] = 3;  // the version follows the 8-byte magic
    StatusOr<Catalog> decoded = DecodeCatalog(Reseal(bytes));
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.status().message().find("version 3 is not supported"), std::string::npos)
        << decoded.status().message();
}

TEST(CatalogFormatTest, RecordCountBeyondTheRecordsIsRejected) {
    std::string bytes = EncodeCatalog(TwoRegions(3));
    bytes[12] = 3;  // the count follows the version
    StatusOr<Catalog> decoded = DecodeCatalog(Reseal(bytes));
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.status().message().find("cut short"), std::string::npos)
        << decoded.status().message();
}

TEST(CatalogFormatTest, BytesAfterTheLastRecordAreRejected) {
    std::string bytes = EncodeCatalog(TwoRegions(3));
    bytes[12] = 1;
    StatusOr<Catalog> decoded = DecodeCatalog(Reseal(bytes));
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.status().message().find("unexpected bytes"), std::string::npos)
        << decoded.status().message();
}

TEST(CatalogFileTest, EmptyDirectoryIsANewPool) {
    StatusOr<LoadedCatalog> loaded = LoadCatalog(FreshTestDirectory());
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->source, LoadedCatalog::Source::kNone);
    EXPECT_TRUE(loaded->catalog.entries.empty());
}

TEST(CatalogFileTest, CommitThenLoadGivesItBackAndKeepsThePrevious) {
    const std::string dir = FreshTestDirectory();
    Catalog first = TwoRegions(1);
    Catalog second = TwoRegions(2);
    second.entries.pop_back();
    ASSERT_TRUE(CommitCatalog(dir, first).status.ok());
    ASSERT_TRUE(CommitCatalog(dir, second).status.ok());

    StatusOr<LoadedCatalog> loaded = LoadCatalog(dir);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->source, LoadedCatalog::Source::kCurrent);
    EXPECT_EQ(loaded->catalog, second);
    StatusOr<Catalog> previous = DecodeCatalog(ReadFileOrEmpty(dir + "/catalog.prev"));
    ASSERT_TRUE(previous.ok());
    EXPECT_EQ(*previous, first);
    EXPECT_FALSE(std::filesystem::exists(dir + "/catalog.tmp"));
}

TEST(CatalogFileTest, DamagedCatalogFallsBackToThePreviousGeneration) {
    const std::string dir = FreshTestDirectory();
    ASSERT_TRUE(CommitCatalog(dir, TwoRegions(1)).status.ok());
    ASSERT_TRUE(CommitCatalog(dir, TwoRegions(2)).status.ok());
    FlipByte(dir + "/catalog", 30);

    StatusOr<LoadedCatalog> loaded = LoadCatalog(dir);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->source, LoadedCatalog::Source::kPrevious);
    EXPECT_EQ(loaded->catalog, TwoRegions(1));
    EXPECT_NE(loaded->damage.find(dir + "/catalog is damaged: checksum mismatch"),
              std::string::npos)
        << loaded->damage;
}

TEST(CatalogFileTest, DamagedCatalogWithoutPreviousIsAnErrorThatSaysWhatToDo) {
    const std::string dir = FreshTestDirectory();
    ASSERT_TRUE(CommitCatalog(dir, TwoRegions(1)).status.ok());
    FlipByte(dir + "/catalog", 30);

    StatusOr<LoadedCatalog> loaded = LoadCatalog(dir);
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.status().code(), StatusCode::kFailedPrecondition);
    const std::string message = loaded.status().message();
    EXPECT_NE(message.find(dir + "/catalog is damaged: checksum mismatch"), std::string::npos)
        << message;
    EXPECT_NE(message.find("Restore the catalog from a backup"), std::string::npos) << message;
}

TEST(CatalogFileTest, BothGenerationsDamagedIsAnError) {
    const std::string dir = FreshTestDirectory();
    ASSERT_TRUE(CommitCatalog(dir, TwoRegions(1)).status.ok());
    ASSERT_TRUE(CommitCatalog(dir, TwoRegions(2)).status.ok());
    FlipByte(dir + "/catalog", 30);
    FlipByte(dir + "/catalog.prev", 31);

    StatusOr<LoadedCatalog> loaded = LoadCatalog(dir);
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(loaded.status().message().find(dir + "/catalog.prev is damaged too"),
              std::string::npos)
        << loaded.status().message();
}

TEST(CatalogFileTest, SetAsideMovesTheDamagedFile) {
    const std::string dir = FreshTestDirectory();
    ASSERT_TRUE(CommitCatalog(dir, TwoRegions(1)).status.ok());
    const std::string bytes = ReadFileOrEmpty(dir + "/catalog");
    ASSERT_TRUE(SetAsideDamagedCatalog(dir).ok());
    EXPECT_FALSE(std::filesystem::exists(dir + "/catalog"));
    EXPECT_EQ(ReadFileOrEmpty(dir + "/catalog.damaged"), bytes);
}

// What an rpmad before issue 24 left when it crashed in the commit after a
// recovery: the damaged catalog set aside, catalog.prev unlinked, and the
// recovered catalog written and synced as catalog.tmp.
TEST(CatalogFileTest, AnInterruptedRecoveryOfAnOlderRpmadIsPickedUpFromItsTemporaryCatalog) {
    const std::string dir = FreshTestDirectory();
    WriteFile(dir + "/catalog.damaged", "damaged");
    WriteFile(dir + "/catalog.tmp", EncodeCatalog(TwoRegions(4)));

    StatusOr<LoadedCatalog> loaded = LoadCatalog(dir);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->source, LoadedCatalog::Source::kPrevious);
    EXPECT_EQ(loaded->catalog, TwoRegions(4));
    EXPECT_FALSE(std::filesystem::exists(dir + "/catalog.tmp"));
    EXPECT_EQ(ReadFileOrEmpty(dir + "/catalog.prev"), EncodeCatalog(TwoRegions(4)));
}

TEST(CatalogFileTest, ATemporaryCatalogCutShortIsNeverUsed) {
    const std::string dir = FreshTestDirectory();
    std::string cut = EncodeCatalog(TwoRegions(4));
    cut.resize(cut.size() - 3);
    WriteFile(dir + "/catalog.damaged", "damaged");
    WriteFile(dir + "/catalog.tmp", cut);
    StatusOr<LoadedCatalog> loaded = LoadCatalog(dir);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->source, LoadedCatalog::Source::kNone);
    EXPECT_FALSE(std::filesystem::exists(dir + "/catalog.prev"));
}

// A new pool's first commit cut short after catalog.tmp was synced.
TEST(CatalogFileTest, ATemporaryCatalogWithoutADamagedOneIsANewPool) {
    const std::string dir = FreshTestDirectory();
    WriteFile(dir + "/catalog.tmp", EncodeCatalog(Catalog{}));
    StatusOr<LoadedCatalog> loaded = LoadCatalog(dir);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->source, LoadedCatalog::Source::kNone);
    EXPECT_FALSE(std::filesystem::exists(dir + "/catalog.prev"));
}

TEST(CatalogFileTest, FullFilesystemKeepsTheOldCatalog) {
    const std::string dir = FreshTestDirectory() + "/mnt";
    ScratchTmpfs tmpfs(dir, 64 * 1024);
    ASSERT_TRUE(tmpfs.mounted()) << tmpfs.error();
    ASSERT_TRUE(CommitCatalog(dir, TwoRegions(1)).status.ok());
    const std::string before = ReadFileOrEmpty(dir + "/catalog");
    {
        // Fill every free block.
        std::ofstream filler(dir + "/filler", std::ios::binary);
        std::string block(4096, 'x');
        while (filler.write(block.data(), block.size()) && filler.flush()) {
        }
    }
    ASSERT_EQ(tmpfs.FreeBytes(), 0u);

    Status status = CommitCatalog(dir, TwoRegions(2)).status;
    ASSERT_EQ(status.code(), StatusCode::kResourceExhausted) << status.message();
    EXPECT_NE(status.message().find(dir + "/catalog.tmp"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("No space left on device"), std::string::npos);
    EXPECT_EQ(ReadFileOrEmpty(dir + "/catalog"), before);
    EXPECT_FALSE(std::filesystem::exists(dir + "/catalog.tmp"));
}

TEST(CatalogFileTest, ReadOnlyFilesystemKeepsTheOldCatalog) {
    const std::string dir = FreshTestDirectory() + "/mnt";
    ScratchTmpfs tmpfs(dir, 64 * 1024);
    ASSERT_TRUE(tmpfs.mounted()) << tmpfs.error();
    ASSERT_TRUE(CommitCatalog(dir, TwoRegions(1)).status.ok());
    const std::string before = ReadFileOrEmpty(dir + "/catalog");
    std::string error = tmpfs.RemountReadOnly();
    ASSERT_TRUE(error.empty()) << error;

    Status status = CommitCatalog(dir, TwoRegions(2)).status;
    ASSERT_EQ(status.code(), StatusCode::kPermissionDenied) << status.message();
    EXPECT_NE(status.message().find(dir + "/catalog.tmp"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("Read-only file system"), std::string::npos);
    EXPECT_EQ(ReadFileOrEmpty(dir + "/catalog"), before);
}

}  // namespace
}  // namespace rpmad
