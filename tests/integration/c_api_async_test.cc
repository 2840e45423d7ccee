// rpma_client.h's asynchronous operations, completion polling, batches and
// extensible open options, against three real rpmads on loopback. The
// library is called through the C API only.
#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rpma_client.h"
#include "tests/integration/process.h"
#include "tests/integration/rpmad_harness.h"
#include "tests/integration/stopped_daemon.h"
#include "tests/integration/test_pki.h"

namespace rpma::testing {
namespace {

constexpr uint64_t kRegionSize = uint64_t{4} << 20;
constexpr size_t kRecord = 4096;
constexpr size_t kOps = 64;

// Distinct bytes per record.
std::vector<std::byte> Record(size_t i) {
    return Pattern(kRecord, static_cast<uint8_t>(i * 7 + 1));
}

void *Tag(size_t i) {
    return reinterpret_cast<void *>(static_cast<uintptr_t>(i + 1));
}

// A completion with its message copied (the library's is valid until the
// thread's next poll).
struct Completed {
    void *user_data;
    int status;
    int op;
    std::string message;
};

class CApiAsyncTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        daemons_ = new std::array<std::unique_ptr<Rpmad>, 3>();
        start_error_ = StartEach(*daemons_, "c-api-pool");
    }
    static void TearDownTestSuite() {
        delete daemons_;
        daemons_ = nullptr;
    }
    void SetUp() override {
        ASSERT_EQ(start_error_, "");
        for (const auto &d : *daemons_)
            addresses_.push_back(d->control().c_str());
    }
    void TearDown() override { rpma_client_region_close(region_); }

    // Each test writes a region of its own.
    static std::string Name() {
        return ::testing::UnitTest::GetInstance()->current_test_info()->name();
    }
    rpma_client_open_options Options() const {
        rpma_client_open_options options{};
        options.size = sizeof options;
        options.create_size = kRegionSize;
        options.operation_timeout_ms = 2000;
        return options;
    }
    int OpenWith(const rpma_client_open_options *options, rpma_client_region **region) {
        return rpma_client_region_open_ex(addresses_.data(), addresses_.size(), Name().c_str(),
                                          options, region);
    }
    void OpenRegion() {
        const auto options = Options();
        ASSERT_EQ(OpenWith(&options, &region_), RPMA_CLIENT_OK) << rpma_client_last_error();
    }

    // Polls until `count` completions came (poll(2) on the fd between
    // them, 10 s at most each), in the order they came.
    std::vector<Completed> Await(rpma_client_region *region, size_t count) {
        const int fd = rpma_client_poll_fd(region);
        EXPECT_GE(fd, 0) << rpma_client_last_error();
        std::vector<Completed> got;
        while (got.size() < count) {
            pollfd readable{fd, POLLIN, 0};
            if (poll(&readable, 1, 10000) != 1) {
                ADD_FAILURE() << "only " << got.size() << " of " << count
                              << " completions within 10 s";
                break;
            }
            std::array<rpma_client_completion, 16> batch;
            const int n = rpma_client_poll(region, batch.data(), batch.size());
            EXPECT_GT(n, 0) << "the fd was readable but nothing was polled";
            if (n <= 0)
                break;
            for (int i = 0; i < n; ++i) {
                EXPECT_EQ(batch[i].status == RPMA_CLIENT_OK, batch[i].message[0] == '\0')
                    << batch[i].message;
                got.push_back({batch[i].user_data, batch[i].status, batch[i].op, batch[i].message});
            }
        }
        return got;
    }
    // Nothing left: the fd is not readable and poll returns none.
    void ExpectDrained(rpma_client_region *region) {
        pollfd readable{rpma_client_poll_fd(region), POLLIN, 0};
        EXPECT_EQ(poll(&readable, 1, 0), 0) << "the fd is readable with nothing to poll";
        rpma_client_completion one;
        EXPECT_EQ(rpma_client_poll(region, &one, 1), 0);
    }
    // Records [0, kOps) as rpma_client_write_persist_async each, tagged
    // Tag(i); *records keeps their bytes until they complete.
    void SubmitRecords(std::vector<std::vector<std::byte>> *records) {
        for (size_t i = 0; i < kOps; ++i)
            records->push_back(Record(i));
        for (size_t i = 0; i < kOps; ++i)
            ASSERT_EQ(rpma_client_write_persist_async(region_, i * kRecord, (*records)[i].data(),
                                                      kRecord, Tag(i)),
                      RPMA_CLIENT_OK)
                << rpma_client_last_error();
    }
    // Records [0, count) on every replica, byte for byte.
    void ExpectRecordsOnEachReplica(size_t count) {
        std::vector<std::byte> in(count * kRecord);
        for (size_t r = 0; r < addresses_.size(); ++r) {
            ASSERT_EQ(rpma_client_read(region_, r, 0, in.data(), in.size()), RPMA_CLIENT_OK)
                << rpma_client_last_error();
            for (size_t i = 0; i < count; ++i) {
                const auto record = Record(i);
                ASSERT_TRUE(std::equal(record.begin(), record.end(), in.begin() + i * kRecord))
                    << "replica " << r << " lacks record " << i;
            }
        }
    }

    static std::array<std::unique_ptr<Rpmad>, 3> *daemons_;
    static std::string start_error_;
    std::vector<const char *> addresses_;
    rpma_client_region *region_ = nullptr;
};

std::array<std::unique_ptr<Rpmad>, 3> *CApiAsyncTest::daemons_ = nullptr;
std::string CApiAsyncTest::start_error_;

TEST_F(CApiAsyncTest, WritePersistAsyncCompletesEachOnceInOrderThroughThePollFd) {
    OpenRegion();
    std::vector<std::vector<std::byte>> records;
    ASSERT_NO_FATAL_FAILURE(SubmitRecords(&records));
    const auto got = Await(region_, kOps);
    ASSERT_EQ(got.size(), kOps);
    for (size_t i = 0; i < kOps; ++i) {
        EXPECT_EQ(got[i].user_data, Tag(i)) << "completion " << i << " out of submission order";
        EXPECT_EQ(got[i].status, RPMA_CLIENT_OK) << got[i].message;
        EXPECT_EQ(got[i].op, RPMA_CLIENT_OP_WRITE_PERSIST);
    }
    ExpectDrained(region_);
    ExpectRecordsOnEachReplica(kOps);
}

TEST_F(CApiAsyncTest, WithoutGroupCommitEachPersistIsFlushedOnItsOwn) {
    auto options = Options();
    options.flags = RPMA_CLIENT_OPEN_NO_GROUP_COMMIT;
    ASSERT_EQ(OpenWith(&options, &region_), RPMA_CLIENT_OK) << rpma_client_last_error();
    // The persistent flushes each daemon's provider applied to the region.
    auto flushes = [this] {
        std::vector<uint64_t> counts;
        for (const auto &daemon : *daemons_) {
            v1::GetRegionRequest request;
            request.set_name(Name());
            v1::Region region;
            EXPECT_TRUE(
                daemon->Regions()->GetRegion(Rpmad::Context().get(), request, &region).ok());
            counts.push_back(region.remote_flushes());
        }
        return counts;
    };
    const std::vector<uint64_t> before = flushes();
    std::vector<std::vector<std::byte>> records;
    ASSERT_NO_FATAL_FAILURE(SubmitRecords(&records));
    const auto got = Await(region_, kOps);
    ASSERT_EQ(got.size(), kOps);
    const std::vector<uint64_t> after = flushes();
    for (size_t r = 0; r < after.size(); ++r)
        EXPECT_EQ(after[r] - before[r], kOps) << "replica " << r;
    ExpectRecordsOnEachReplica(kOps);
}

TEST_F(CApiAsyncTest, ReadsWritesAndPersistsAsyncFromSeveralThreads) {
    OpenRegion();
    constexpr size_t kThreads = 4, kEach = kOps / kThreads;
    std::vector<std::vector<std::byte>> records;
    for (size_t i = 0; i < kOps; ++i)
        records.push_back(Record(i));
    // Each thread writes its records, then persists their range.
    std::vector<std::thread> threads;
    for (size_t t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (size_t i = t * kEach; i < (t + 1) * kEach; ++i)
                EXPECT_EQ(rpma_client_write_async(region_, i * kRecord, records[i].data(), kRecord,
                                                  Tag(i)),
                          RPMA_CLIENT_OK);
            EXPECT_EQ(rpma_client_persist_async(region_, t * kEach * kRecord, kEach * kRecord,
                                                Tag(kOps + t)),
                      RPMA_CLIENT_OK);
        });
    for (auto &t : threads)
        t.join();
    const auto got = Await(region_, kOps + kThreads);
    std::vector<int> seen(kOps + kThreads);
    for (const auto &c : got) {
        const uintptr_t i = reinterpret_cast<uintptr_t>(c.user_data) - 1;
        ASSERT_LT(i, seen.size());
        ++seen[i];
        EXPECT_EQ(c.status, RPMA_CLIENT_OK) << c.message;
        EXPECT_EQ(c.op, i < kOps ? RPMA_CLIENT_OP_WRITE : RPMA_CLIENT_OP_PERSIST);
    }
    for (size_t i = 0; i < seen.size(); ++i)
        EXPECT_EQ(seen[i], 1) << "user data " << i + 1;
    ExpectDrained(region_);

    // Read back asynchronously from every replica at once.
    std::vector<std::vector<std::byte>> in(addresses_.size(),
                                           std::vector<std::byte>(kOps * kRecord));
    for (size_t r = 0; r < addresses_.size(); ++r)
        ASSERT_EQ(rpma_client_read_async(region_, r, 0, in[r].data(), in[r].size(), Tag(r)),
                  RPMA_CLIENT_OK);
    for (const auto &c : Await(region_, addresses_.size())) {
        EXPECT_EQ(c.status, RPMA_CLIENT_OK) << c.message;
        EXPECT_EQ(c.op, RPMA_CLIENT_OP_READ);
    }
    for (size_t r = 0; r < addresses_.size(); ++r)
        for (size_t i = 0; i < kOps; ++i)
            ASSERT_TRUE(
                std::equal(records[i].begin(), records[i].end(), in[r].begin() + i * kRecord))
                << "replica " << r << " lacks record " << i;
}

TEST_F(CApiAsyncTest, BatchesCommitSynchronouslyAndAsynchronously) {
    OpenRegion();
    std::vector<std::vector<std::byte>> records;
    for (size_t i = 0; i < 8; ++i)
        records.push_back(Record(i));
    rpma_client_batch *batch = nullptr;
    ASSERT_EQ(rpma_client_batch_new(&batch), RPMA_CLIENT_OK);
    // Records 0-3 in one commit (out of order), 4-7 in an async one.
    for (size_t i : {2, 0, 3, 1})
        ASSERT_EQ(rpma_client_batch_add_write(batch, i * kRecord, records[i].data(), kRecord),
                  RPMA_CLIENT_OK);
    EXPECT_EQ(rpma_client_batch_size(batch), 4u);
    ASSERT_EQ(rpma_client_commit(region_, batch), RPMA_CLIENT_OK) << rpma_client_last_error();
    rpma_client_batch_clear(batch);
    EXPECT_EQ(rpma_client_batch_size(batch), 0u);
    for (size_t i = 4; i < 8; ++i)
        ASSERT_EQ(rpma_client_batch_add_write(batch, i * kRecord, records[i].data(), kRecord),
                  RPMA_CLIENT_OK);
    ASSERT_EQ(rpma_client_commit_async(region_, batch, Tag(7)), RPMA_CLIENT_OK);
    // The batch may go once the call returned; its buffers may not.
    rpma_client_batch_free(batch);
    const auto got = Await(region_, 1);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].user_data, Tag(7));
    EXPECT_EQ(got[0].op, RPMA_CLIENT_OP_COMMIT);
    EXPECT_EQ(got[0].status, RPMA_CLIENT_OK) << got[0].message;
    ExpectRecordsOnEachReplica(8);

    // A batch with a write beyond the region: refused, synchronously and
    // through poll.
    ASSERT_EQ(rpma_client_batch_new(&batch), RPMA_CLIENT_OK);
    ASSERT_EQ(rpma_client_batch_add_write(batch, 0, records[0].data(), kRecord), RPMA_CLIENT_OK);
    ASSERT_EQ(rpma_client_batch_add_write(batch, kRegionSize, records[1].data(), kRecord),
              RPMA_CLIENT_OK);
    EXPECT_EQ(rpma_client_commit(region_, batch), RPMA_CLIENT_E_INVAL);
    EXPECT_NE(std::string(rpma_client_last_error()).find("beyond the region"), std::string::npos)
        << rpma_client_last_error();
    ASSERT_EQ(rpma_client_commit_async(region_, batch, Tag(8)), RPMA_CLIENT_OK);
    rpma_client_batch_free(batch);
    const auto refused = Await(region_, 1);
    ASSERT_EQ(refused.size(), 1u);
    EXPECT_EQ(refused[0].user_data, Tag(8));
    EXPECT_EQ(refused[0].status, RPMA_CLIENT_E_INVAL);
    EXPECT_NE(refused[0].message.find("beyond the region"), std::string::npos)
        << refused[0].message;
    EXPECT_EQ(rpma_client_commit(region_, nullptr), RPMA_CLIENT_E_INVAL);
    EXPECT_EQ(rpma_client_batch_new(nullptr), RPMA_CLIENT_E_INVAL);
}

TEST_F(CApiAsyncTest, ErrorsOfSubmittedOperationsComeThroughPoll) {
    OpenRegion();
    const auto bytes = Record(0);
    // Refused by the region: submitted, then completed with the error.
    ASSERT_EQ(
        rpma_client_write_persist_async(region_, kRegionSize - 10, bytes.data(), kRecord, Tag(0)),
        RPMA_CLIENT_OK);
    ASSERT_EQ(rpma_client_write_async(region_, 0, bytes.data(), kRecord, Tag(1)), RPMA_CLIENT_OK);
    std::vector<std::byte> in(kRecord);
    ASSERT_EQ(rpma_client_read_async(region_, 7, 0, in.data(), in.size(), Tag(2)), RPMA_CLIENT_OK);
    const auto got = Await(region_, 3);
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[0].user_data, Tag(0));
    EXPECT_EQ(got[0].status, RPMA_CLIENT_E_INVAL);
    EXPECT_NE(got[0].message.find("beyond the region"), std::string::npos) << got[0].message;
    EXPECT_EQ(got[1].status, RPMA_CLIENT_OK) << got[1].message;
    EXPECT_EQ(got[2].status, RPMA_CLIENT_E_INVAL) << "a read from replica 7 of 3";
    EXPECT_NE(got[2].message, "");

    // NULL arguments fail at once and submit nothing.
    EXPECT_EQ(rpma_client_write_async(region_, 0, nullptr, kRecord, Tag(3)), RPMA_CLIENT_E_INVAL);
    EXPECT_EQ(rpma_client_write_persist_async(nullptr, 0, bytes.data(), kRecord, Tag(3)),
              RPMA_CLIENT_E_INVAL);
    EXPECT_EQ(rpma_client_read_async(region_, 0, 0, nullptr, kRecord, Tag(3)), RPMA_CLIENT_E_INVAL);
    EXPECT_EQ(rpma_client_persist_async(nullptr, 0, kRecord, Tag(3)), RPMA_CLIENT_E_INVAL);
    EXPECT_EQ(rpma_client_poll(region_, nullptr, 1), RPMA_CLIENT_E_INVAL);
    EXPECT_EQ(rpma_client_poll_fd(nullptr), RPMA_CLIENT_E_INVAL);
    ExpectDrained(region_);

    // A reader refuses writes: through poll as well.
    auto options = Options();
    options.flags = RPMA_CLIENT_OPEN_READ_ONLY;
    options.quorum = 1;
    rpma_client_region *reader = nullptr;
    ASSERT_EQ(OpenWith(&options, &reader), RPMA_CLIENT_OK) << rpma_client_last_error();
    ASSERT_EQ(rpma_client_write_persist_async(reader, 0, bytes.data(), kRecord, Tag(4)),
              RPMA_CLIENT_OK);
    const auto refused = Await(reader, 1);
    ASSERT_EQ(refused.size(), 1u);
    EXPECT_EQ(refused[0].status, RPMA_CLIENT_E_PRECONDITION) << refused[0].message;
    rpma_client_region_close(reader);
}

TEST_F(CApiAsyncTest, CloseWaitsForOutstandingOperationsAndDropsTheirCompletions) {
    auto options = Options();
    // Fewer in flight than submitted: submissions wait for the oldest.
    options.max_in_flight = 8;
    ASSERT_EQ(OpenWith(&options, &region_), RPMA_CLIENT_OK) << rpma_client_last_error();
    auto records = std::make_unique<std::vector<std::vector<std::byte>>>();
    for (size_t i = 0; i < kOps; ++i)
        records->push_back(Record(i));
    ASSERT_GE(rpma_client_poll_fd(region_), 0);
    for (size_t i = 0; i < kOps; ++i)
        ASSERT_EQ(rpma_client_write_persist_async(region_, i * kRecord, (*records)[i].data(),
                                                  kRecord, Tag(i)),
                  RPMA_CLIENT_OK);
    // Some polled, the rest not.
    rpma_client_completion first[4];
    EXPECT_GE(rpma_client_poll(region_, first, 4), 0);
    rpma_client_region_close(region_);
    region_ = nullptr;
    // Nothing of the region touches the buffers any more (ASan would
    // report it).
    records.reset();

    // Every operation was done before close returned: a new handle finds
    // them all.
    OpenRegion();
    ExpectRecordsOnEachReplica(kOps);
}

TEST_F(CApiAsyncTest, WithNoWaitAFullRegionRefusesAtOnceAndTakesTheSubmissionLater) {
    constexpr size_t kMost = 4;
    auto options = Options();
    options.flags = RPMA_CLIENT_OPEN_NO_WAIT;
    options.max_in_flight = kMost;
    // Longer than the test keeps a replica stopped: nothing is marked failed.
    options.operation_timeout_ms = 30000;
    ASSERT_EQ(OpenWith(&options, &region_), RPMA_CLIENT_OK) << rpma_client_last_error();
    std::vector<std::vector<std::byte>> records;
    for (size_t i = 0; i <= kMost; ++i)
        records.push_back(Record(i));
    {
        // Replica 2 answers nothing: every submission stays outstanding.
        Stopped lagging((*daemons_)[2]->process().pid());
        ASSERT_TRUE(lagging.stopped());
        for (size_t i = 0; i < kMost; ++i)
            ASSERT_EQ(rpma_client_write_persist_async(region_, i * kRecord, records[i].data(),
                                                      kRecord, Tag(i)),
                      RPMA_CLIENT_OK)
                << rpma_client_last_error();
        // Full: refused at once, whatever the operation, nothing submitted.
        EXPECT_EQ(rpma_client_write_persist_async(region_, kMost * kRecord, records[kMost].data(),
                                                  kRecord, Tag(kMost)),
                  RPMA_CLIENT_E_EXHAUSTED);
        EXPECT_NE(std::string(rpma_client_last_error()).find("max_in_flight"), std::string::npos)
            << rpma_client_last_error();
        EXPECT_EQ(rpma_client_persist_async(region_, 0, kRecord, Tag(100)),
                  RPMA_CLIENT_E_EXHAUSTED);
        std::vector<std::byte> in(kRecord);
        EXPECT_EQ(rpma_client_read_async(region_, 0, 0, in.data(), in.size(), Tag(101)),
                  RPMA_CLIENT_E_EXHAUSTED);
        rpma_client_batch *batch = nullptr;
        ASSERT_EQ(rpma_client_batch_new(&batch), RPMA_CLIENT_OK);
        EXPECT_EQ(rpma_client_commit_async(region_, batch, Tag(102)), RPMA_CLIENT_E_EXHAUSTED);
        rpma_client_batch_free(batch);
        // The refusals left no completion behind.
        rpma_client_completion none;
        EXPECT_EQ(rpma_client_poll(region_, &none, 1), 0);
    }
    // Resumed: the outstanding ones complete, in order; then there is room.
    const std::vector<Completed> first = Await(region_, kMost);
    ASSERT_EQ(first.size(), kMost);
    for (size_t i = 0; i < kMost; ++i) {
        EXPECT_EQ(first[i].user_data, Tag(i));
        EXPECT_EQ(first[i].status, RPMA_CLIENT_OK) << first[i].message;
    }
    ASSERT_EQ(rpma_client_write_persist_async(region_, kMost * kRecord, records[kMost].data(),
                                              kRecord, Tag(kMost)),
              RPMA_CLIENT_OK)
        << rpma_client_last_error();
    const std::vector<Completed> last = Await(region_, 1);
    ASSERT_EQ(last.size(), 1u);
    EXPECT_EQ(last[0].user_data, Tag(kMost));
    EXPECT_EQ(last[0].status, RPMA_CLIENT_OK) << last[0].message;
    ExpectDrained(region_);
    ExpectRecordsOnEachReplica(kMost + 1);
}

TEST_F(CApiAsyncTest, OpenOptionsOfASmallerSizeAreReadUpToIt) {
    // An older program's struct ends before max_in_flight: what lies past
    // its size (here a certificate that does not exist) is never read.
    struct {
        rpma_client_open_options options;
    } older{};
    older.options = Options();
    older.options.size = offsetof(rpma_client_open_options, max_in_flight);
    older.options.cert_file = "/nonexistent/client.pem";
    older.options.key_file = "/nonexistent/client.key";
    ASSERT_EQ(OpenWith(&older.options, &region_), RPMA_CLIENT_OK) << rpma_client_last_error();
    EXPECT_EQ(rpma_client_region_size(region_), kRegionSize);
    const auto bytes = Record(0);
    EXPECT_EQ(rpma_client_write_persist(region_, 0, bytes.data(), kRecord), RPMA_CLIENT_OK);
    rpma_client_region_close(region_);
    region_ = nullptr;
    // NULL options: defaults (the region exists now).
    ASSERT_EQ(OpenWith(nullptr, &region_), RPMA_CLIENT_OK) << rpma_client_last_error();
}

TEST_F(CApiAsyncTest, OpenOptionsOfALargerSizeNeedAZeroTail) {
    // A newer program's struct: fields this library does not know.
    struct {
        rpma_client_open_options options;
        uint64_t newer_field;
    } newer{};
    newer.options = Options();
    newer.options.size = sizeof newer;
    newer.newer_field = 1;
    EXPECT_EQ(OpenWith(&newer.options, &region_), RPMA_CLIENT_E_INVAL);
    EXPECT_EQ(region_, nullptr);
    EXPECT_NE(std::string(rpma_client_last_error()).find("newer librpma_client"), std::string::npos)
        << rpma_client_last_error();
    // Unset, they ask for nothing this library cannot do.
    newer.newer_field = 0;
    ASSERT_EQ(OpenWith(&newer.options, &region_), RPMA_CLIENT_OK) << rpma_client_last_error();

    rpma_client_region *other = nullptr;
    auto options = Options();
    options.size = 0;
    EXPECT_EQ(OpenWith(&options, &other), RPMA_CLIENT_E_INVAL);
    EXPECT_NE(std::string(rpma_client_last_error()).find("sizeof(struct rpma_client_open_options)"),
              std::string::npos)
        << rpma_client_last_error();
    options = Options();
    options.flags = 0x80;
    EXPECT_EQ(OpenWith(&options, &other), RPMA_CLIENT_E_INVAL);
    EXPECT_EQ(other, nullptr);
}

TEST_F(CApiAsyncTest, AMissingClientCertificateIsInvalidAndSaysWhichFile) {
    auto options = Options();
    options.cert_file = "/nonexistent/client.pem";
    options.key_file = "/nonexistent/client.key";
    EXPECT_EQ(OpenWith(&options, &region_), RPMA_CLIENT_E_INVAL);
    EXPECT_NE(std::string(rpma_client_last_error()).find("/nonexistent/client.pem"),
              std::string::npos)
        << rpma_client_last_error();
    // A certificate without its key.
    options.key_file = nullptr;
    EXPECT_EQ(OpenWith(&options, &region_), RPMA_CLIENT_E_INVAL);
    EXPECT_NE(std::string(rpma_client_last_error()).find("give both"), std::string::npos)
        << rpma_client_last_error();
    EXPECT_EQ(region_, nullptr);
}

// A daemon that requires client certificates: opened with one, refused
// without.
TEST(CApiTlsTest, OpensWithAClientCertificateWhereOneIsRequired) {
    Pki pki;
    ASSERT_EQ(MakePki(&pki), "");
    RpmadOptions daemon;
    daemon.pool_dir = TempPath("tls-pool");
    daemon.config_yaml = "control:\n  tls:\n    cert_file: \"" + pki.server_cert +
                         "\"\n    key_file: \"" + pki.server_key + "\"\n    client_ca_file: \"" +
                         pki.ca + "\"\n    require_client_cert: true\n";
    std::string error;
    auto rpmad = Rpmad::Start(daemon, &error);
    ASSERT_NE(rpmad, nullptr) << error;
    const char *address = rpmad->control().c_str();

    rpma_client_open_options options{};
    options.size = sizeof options;
    options.create_size = kRegionSize;
    options.operation_timeout_ms = 2000;
    options.ca_file = pki.ca.c_str();
    rpma_client_region *region = nullptr;
    EXPECT_NE(rpma_client_region_open_ex(&address, 1, "tls", &options, &region), RPMA_CLIENT_OK);
    EXPECT_EQ(region, nullptr);

    options.cert_file = pki.client_cert.c_str();
    options.key_file = pki.client_key.c_str();
    ASSERT_EQ(rpma_client_region_open_ex(&address, 1, "tls", &options, &region), RPMA_CLIENT_OK)
        << rpma_client_last_error();
    const auto bytes = Record(3);
    std::vector<std::byte> in(kRecord);
    EXPECT_EQ(rpma_client_write_persist(region, 0, bytes.data(), kRecord), RPMA_CLIENT_OK)
        << rpma_client_last_error();
    EXPECT_EQ(rpma_client_read(region, 0, 0, in.data(), kRecord), RPMA_CLIENT_OK)
        << rpma_client_last_error();
    EXPECT_EQ(in, bytes);
    rpma_client_region_close(region);
}

}  // namespace
}  // namespace rpma::testing
