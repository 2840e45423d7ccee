// rpmad after damage on disk and with bad input: a corrupted catalog, a
// truncated region file, a pool that fills up, bad configuration files, a
// second daemon on the same pool. What region_store.h and rpmad.yaml
// promise is what is asserted: recover what can be trusted, refuse with a
// message that names the file or key and the fix, keep serving the rest.
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {
namespace {

constexpr uint64_t kRegionSize = 1 << 20;

std::string ReadFile(const std::string &path) {
    std::ifstream file(path, std::ios::binary);
    std::stringstream bytes;
    bytes << file.rdbuf();
    return bytes.str();
}

void FlipByte(const std::string &path, size_t offset) {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(static_cast<std::streamoff>(offset));
    char byte = 0;
    file.get(byte);
    file.seekp(static_cast<std::streamoff>(offset));
    file.put(static_cast<char>(byte ^ 0x5a));
}

bool Contains(const std::string &text, const std::string &part) {
    return text.find(part) != std::string::npos;
}

class RpmadRecoveryTest : public ::testing::Test {
  protected:
    void SetUp() override { pool_dir_ = TempPath("pool"); }

    std::unique_ptr<Rpmad> Start(std::string *error = nullptr) {
        RpmadOptions options;
        options.pool_dir = pool_dir_;
        std::string ignored;
        return Rpmad::Start(options, error ? error : &ignored);
    }

    // SIGTERM and a clean exit: the pool is left as rpmad leaves it.
    void Stop(Rpmad &rpmad) {
        ASSERT_EQ(kill(rpmad.process().pid(), SIGTERM), 0);
        const auto status = rpmad.process().Wait(std::chrono::seconds(10));
        ASSERT_TRUE(status.has_value());
        EXPECT_TRUE(status->Success()) << rpmad.process().Describe();
    }

    std::vector<v1::Region> List(const Rpmad &rpmad) {
        v1::ListRegionsResponse list;
        EXPECT_TRUE(rpmad.Regions()->ListRegions(Rpmad::Context().get(), {}, &list).ok());
        return {list.regions().begin(), list.regions().end()};
    }

    // Writes `bytes` at 0 through a session of `region`, persists them and
    // reads them back; "" when all went right.
    std::string WriteAndReadBack(const Rpmad &rpmad, const std::string &region,
                                 const std::vector<std::byte> &bytes) {
        v1::OpenSessionResponse session;
        if (grpc::Status s = rpmad.OpenSession(region, &session); !s.ok())
            return "OpenSession: " + s.error_message();
        rpma_conn_event event;
        auto client = SessionClient::Connect(session, &event);
        if (client == nullptr)
            return std::string("connect: ") + rpma_utils_conn_event_2str(event);
        std::vector<std::byte> read;
        if (client->Write(0, bytes) != IBV_WC_SUCCESS ||
            client->Flush(0, bytes.size()) != IBV_WC_SUCCESS ||
            client->Read(0, bytes.size(), &read) != IBV_WC_SUCCESS)
            return "a data-plane operation failed";
        return read == bytes ? "" : "read back other bytes";
    }

    std::string ReadRegion(const Rpmad &rpmad, const std::string &region, size_t length,
                           std::vector<std::byte> *out) {
        v1::OpenSessionResponse session;
        if (grpc::Status s = rpmad.OpenSession(region, &session); !s.ok())
            return "OpenSession: " + s.error_message();
        rpma_conn_event event;
        auto client = SessionClient::Connect(session, &event);
        if (client == nullptr)
            return std::string("connect: ") + rpma_utils_conn_event_2str(event);
        return client->Read(0, length, out) == IBV_WC_SUCCESS ? "" : "read failed";
    }

    // A pool with regions "first" and "second", `bytes` written into
    // `written`, left by a clean stop.
    void MakeFirstAndSecond(const std::string &written, const std::vector<std::byte> &bytes) {
        auto rpmad = Start();
        ASSERT_NE(rpmad, nullptr);
        ASSERT_TRUE(rpmad->CreateRegion("first", kRegionSize).ok());
        ASSERT_TRUE(rpmad->CreateRegion("second", kRegionSize).ok());
        ASSERT_EQ(WriteAndReadBack(*rpmad, written, bytes), "");
        Stop(*rpmad);
    }

    std::string pool_dir_;
};

TEST_F(RpmadRecoveryTest, ADamagedCatalogIsReplacedByItsPreviousGeneration) {
    const auto bytes = Pattern(8192, 0x42);
    MakeFirstAndSecond("first", bytes);
    if (HasFatalFailure())
        return;
    const std::string catalog = pool_dir_ + "/catalog";
    const std::string damaged = ReadFile(catalog);
    ASSERT_GT(damaged.size(), 16u);
    FlipByte(catalog, damaged.size() / 2);

    std::string error;
    auto rpmad = Start(&error);
    ASSERT_NE(rpmad, nullptr) << error;
    // The damaged file is kept for a person to look at, and the log says
    // what happened.
    EXPECT_TRUE(std::filesystem::exists(pool_dir_ + "/catalog.damaged"));
    // catalog.prev lacked "second": its file is adopted, not removed.
    const auto regions = List(*rpmad);
    ASSERT_EQ(regions.size(), 2u);
    EXPECT_EQ(regions[0].name(), "first");
    EXPECT_EQ(regions[1].name(), "second");
    for (const auto &region : regions)
        EXPECT_TRUE(region.healthy()) << region.name() << ": " << region.problem();
    std::vector<std::byte> read;
    ASSERT_EQ(ReadRegion(*rpmad, "first", bytes.size(), &read), "");
    EXPECT_EQ(read, bytes);
    EXPECT_EQ(WriteAndReadBack(*rpmad, "second", bytes), "");
    rpmad->process().Kill();
    const std::string &log = rpmad->process().Stderr();
    EXPECT_TRUE(Contains(log, catalog + " is damaged")) << log;
    EXPECT_TRUE(Contains(log, "catalog.damaged")) << log;
}

// What an rpmad before issue 24 left when it crashed in the commit after a
// recovery (item 8): the damaged catalog set aside, catalog.prev unlinked,
// the recovered catalog written and synced as catalog.tmp. rpmad starts
// from it by itself. (region_store_crash_test stops at every step.)
TEST_F(RpmadRecoveryTest, APoolLeftWithOnlyTheDamagedAndTheTemporaryCatalogStarts) {
    const auto bytes = Pattern(8192, 0x24);
    MakeFirstAndSecond("second", bytes);
    if (HasFatalFailure())
        return;
    const std::string catalog = pool_dir_ + "/catalog";
    std::filesystem::copy_file(catalog, catalog + ".tmp");
    FlipByte(catalog, ReadFile(catalog).size() / 2);
    std::filesystem::rename(catalog, catalog + ".damaged");
    std::filesystem::remove(catalog + ".prev");

    std::string error;
    auto rpmad = Start(&error);
    ASSERT_NE(rpmad, nullptr) << error;
    const auto regions = List(*rpmad);
    ASSERT_EQ(regions.size(), 2u);
    for (const auto &region : regions)
        EXPECT_TRUE(region.healthy()) << region.name() << ": " << region.problem();
    std::vector<std::byte> read;
    ASSERT_EQ(ReadRegion(*rpmad, "second", bytes.size(), &read), "");
    EXPECT_EQ(read, bytes);
    EXPECT_TRUE(std::filesystem::exists(catalog));
}

TEST_F(RpmadRecoveryTest, BothCatalogGenerationsDamagedRefusesToStartNamingTheFiles) {
    {
        auto rpmad = Start();
        ASSERT_NE(rpmad, nullptr);
        ASSERT_TRUE(rpmad->CreateRegion("only", kRegionSize).ok());
        Stop(*rpmad);
    }
    for (const char *name : {"/catalog", "/catalog.prev"}) {
        const std::string path = pool_dir_ + name;
        ASSERT_TRUE(std::filesystem::exists(path)) << path;
        FlipByte(path, ReadFile(path).size() / 2);
    }
    std::string error;
    EXPECT_EQ(Start(&error), nullptr);
    EXPECT_TRUE(Contains(error, "region catalog " + pool_dir_ + "/catalog is damaged")) << error;
    EXPECT_TRUE(Contains(error, pool_dir_ + "/catalog.prev is damaged too")) << error;
    EXPECT_TRUE(Contains(error, "restore the catalog from a backup")) << error;
    EXPECT_TRUE(Contains(error, "exit code 1")) << error;
    // Nothing was thrown away: the region file is still there.
    EXPECT_TRUE(std::filesystem::exists(pool_dir_ + "/regions/only.pmem"));
}

TEST_F(RpmadRecoveryTest, ATruncatedRegionIsListedUnhealthyAndTheOthersServe) {
    {
        auto rpmad = Start();
        ASSERT_NE(rpmad, nullptr);
        ASSERT_TRUE(rpmad->CreateRegion("intact", kRegionSize).ok());
        ASSERT_TRUE(rpmad->CreateRegion("cut", kRegionSize).ok());
        Stop(*rpmad);
    }
    const std::string cut = pool_dir_ + "/regions/cut.pmem";
    ASSERT_EQ(truncate(cut.c_str(), kRegionSize / 2), 0) << strerror(errno);

    std::string error;
    auto rpmad = Start(&error);
    ASSERT_NE(rpmad, nullptr) << error;
    const auto regions = List(*rpmad);
    ASSERT_EQ(regions.size(), 2u);
    EXPECT_EQ(regions[0].name(), "cut");
    EXPECT_FALSE(regions[0].healthy());
    EXPECT_TRUE(Contains(regions[0].problem(), cut)) << regions[0].problem();
    EXPECT_TRUE(Contains(regions[0].problem(), "truncated")) << regions[0].problem();
    EXPECT_TRUE(regions[1].healthy()) << regions[1].problem();
    v1::Stats stats;
    ASSERT_TRUE(rpmad->Daemon()->GetStats(Rpmad::Context().get(), {}, &stats).ok());
    EXPECT_EQ(stats.unhealthy_regions(), 1u);

    EXPECT_EQ(WriteAndReadBack(*rpmad, "intact", Pattern(4096, 9)), "");
    v1::OpenSessionResponse session;
    const grpc::Status refused = rpmad->OpenSession("cut", &session);
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_TRUE(Contains(refused.error_message(), "truncated")) << refused.error_message();

    v1::DeleteRegionRequest del;
    v1::DeleteRegionResponse deleted;
    del.set_name("cut");
    const grpc::Status status =
        rpmad->Regions()->DeleteRegion(Rpmad::Context().get(), del, &deleted);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_FALSE(std::filesystem::exists(cut));
    const auto after = List(*rpmad);
    ASSERT_EQ(after.size(), 1u);
    EXPECT_EQ(after[0].name(), "intact");
    // The name can be used again.
    EXPECT_TRUE(rpmad->CreateRegion("cut", kRegionSize).ok());
}

// A tmpfs of 2 MiB mounted for the test, unmounted at the end.
class SmallFilesystem {
  public:
    explicit SmallFilesystem(const std::string &path) : path_(path) {
        std::filesystem::create_directories(path_);
        if (mount("tmpfs", path_.c_str(), "tmpfs", 0, "size=2m,mode=0700") != 0)
            error_ = "mount -t tmpfs -o size=2m on " + path_ + " failed: " + strerror(errno) +
                     " (the test needs root, or CAP_SYS_ADMIN in its mount namespace)";
    }
    ~SmallFilesystem() {
        if (error_.empty() && umount(path_.c_str()) != 0)
            ADD_FAILURE() << "umount " << path_ << ": " << strerror(errno);
    }
    const std::string &error() const { return error_; }

  private:
    std::string path_;
    std::string error_;
};

TEST_F(RpmadRecoveryTest, APoolThatFillsUpRefusesTheCreateAndChangesNothing) {
    const std::string mount_point = TempPath("small");
    SmallFilesystem small(mount_point);  // outlives rpmad, which maps files on it
    ASSERT_EQ(small.error(), "");
    pool_dir_ = mount_point + "/pool";
    auto rpmad = Start();
    ASSERT_NE(rpmad, nullptr);
    ASSERT_TRUE(rpmad->CreateRegion("fits", kRegionSize).ok());
    const std::string catalog = ReadFile(pool_dir_ + "/catalog");
    const int fds = OpenFdCount(rpmad->process().pid());

    // Refused creates hold nothing open afterwards.
    for (int again = 0; again < 3; ++again)
        EXPECT_EQ(rpmad->CreateRegion("too-big", 2 * kRegionSize).error_code(),
                  grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(OpenFdCount(rpmad->process().pid()), fds);
    const grpc::Status full = rpmad->CreateRegion("too-big", 2 * kRegionSize);
    EXPECT_EQ(full.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << full.error_message();
    EXPECT_TRUE(Contains(full.error_message(), "no room for region \"too-big\""))
        << full.error_message();
    EXPECT_TRUE(Contains(full.error_message(), pool_dir_)) << full.error_message();
    // The catalog is byte for byte what it was, and no file is left behind.
    EXPECT_EQ(ReadFile(pool_dir_ + "/catalog"), catalog);
    std::vector<std::string> files;
    for (const auto &entry : std::filesystem::directory_iterator(pool_dir_ + "/regions"))
        files.push_back(entry.path().filename().string());
    EXPECT_EQ(files, std::vector<std::string>{"fits.pmem"});
    const auto regions = List(*rpmad);
    ASSERT_EQ(regions.size(), 1u);
    EXPECT_EQ(regions[0].name(), "fits");

    // The daemon still serves, and what does fit can still be created.
    EXPECT_EQ(WriteAndReadBack(*rpmad, "fits", Pattern(8192, 3)), "");
    const grpc::Status fits = rpmad->CreateRegion("small", 64 << 10);
    EXPECT_TRUE(fits.ok()) << fits.error_message();
    rpmad.reset();  // killed and reaped: nothing keeps the filesystem busy
}

TEST_F(RpmadRecoveryTest, BadConfigFilesAreRefusedNamingTheKey) {
    const struct {
        std::string yaml;
        std::string message;
    } cases[] = {
        {"limits:\n  max_sessions: 0\n",
         "limits.max_sessions: 0 is too small; at least one session must be allowed"},
        {"control:\n  lisen: \"127.0.0.1:7300\"\n",
         "control.lisen: unknown key; did you mean \"listen\"?"},
        {"storage:\n  capacity: 10MB\n", "storage.capacity: \"10MB\" is ambiguous"},
        {"control:\n  tls:\n    cert_file: /etc/rpmad/server.pem\n",
         "control.tls.key_file: empty while control.tls.cert_file is set"},
    };
    for (const auto &bad : cases) {
        const std::string path = TempPath("bad.yaml");
        std::ofstream(path) << bad.yaml;
        std::string error;
        auto check = Process::Start({Runfile("daemon/rpmad"), "--check-config", path}, {}, &error);
        ASSERT_NE(check, nullptr) << error;
        const auto status = check->Wait(std::chrono::seconds(10));
        ASSERT_TRUE(status.has_value());
        EXPECT_TRUE(status->exited && status->code == 1) << check->Describe();
        EXPECT_TRUE(Contains(check->Stderr(), path + ":")) << check->Describe();
        EXPECT_TRUE(Contains(check->Stderr(), bad.message)) << check->Describe();

        // rpmad --config with the same file does not start, for the same reason.
        RpmadOptions options;
        options.pool_dir = pool_dir_;
        options.config_yaml = bad.yaml;
        EXPECT_EQ(Rpmad::Start(options, &error), nullptr);
        EXPECT_TRUE(Contains(error, bad.message)) << error;
        EXPECT_TRUE(Contains(error, "exit code 1")) << error;
    }
    // Nothing was started on the pool by a refused configuration.
    EXPECT_FALSE(std::filesystem::exists(pool_dir_ + "/catalog"));
}

TEST_F(RpmadRecoveryTest, ASecondRpmadOnTheSamePoolRefusesAndTheFirstKeepsServing) {
    auto first = Start();
    ASSERT_NE(first, nullptr);
    ASSERT_TRUE(first->CreateRegion("shared", kRegionSize).ok());
    std::string error;
    EXPECT_EQ(Start(&error), nullptr);
    EXPECT_TRUE(Contains(error, "pool directory " + pool_dir_ + " is in use by another rpmad"))
        << error;
    EXPECT_TRUE(Contains(error, "stop that one or choose another pool directory")) << error;
    EXPECT_TRUE(Contains(error, "exit code 1")) << error;
    EXPECT_EQ(WriteAndReadBack(*first, "shared", Pattern(4096, 5)), "");
    ASSERT_EQ(List(*first).size(), 1u);
}

// gRPC listens with SO_REUSEPORT: without a check of its own, a second
// rpmad (another pool, another data port) would listen on the first one's
// control port too and take half of its clients.
TEST_F(RpmadRecoveryTest, ASecondRpmadOnTheSameControlPortRefusesAndTheFirstKeepsServing) {
    auto first = Start();
    ASSERT_NE(first, nullptr);
    ASSERT_TRUE(first->CreateRegion("mine", kRegionSize).ok());
    RpmadOptions options;
    options.pool_dir = TempPath("other-pool");
    options.control_port = first->control_port();
    std::string error;
    auto second = Rpmad::Start(options, &error);
    EXPECT_EQ(second, nullptr) << "a second rpmad serves " << first->control();
    EXPECT_TRUE(Contains(error, "cannot serve the control plane on " + first->control())) << error;
    EXPECT_TRUE(Contains(error, "exit code 1")) << error;
    EXPECT_FALSE(std::filesystem::exists(options.pool_dir)) << "refused, yet it made its pool";
    // Every call reaches the first daemon: each sees its region.
    for (int call = 0; call < 8; ++call) {
        const auto regions = List(*first);
        ASSERT_EQ(regions.size(), 1u) << "call " << call;
        EXPECT_EQ(regions[0].name(), "mine");
    }
}

}  // namespace
}  // namespace rpma::testing

namespace rpma::testing {
namespace {

// storage.devdax_regions on a machine without device DAX: a path that is not
// a DAX device is listed unhealthy with the reason, sessions on it are
// refused, it cannot be deleted (it is configured, not created), and the
// pool's regions serve beside it. (The VM tier with emulated PMem runs the
// same configuration on a real /dev/dax device.)
TEST_F(RpmadRecoveryTest, ADevdaxRegionOnSomethingElseIsUnhealthyAndCannotBeDeleted) {
    const std::string not_dax = TempPath("not-a-dax-device");
    std::ofstream(not_dax) << "a regular file";
    RpmadOptions options;
    options.pool_dir = pool_dir_;
    options.config_yaml = "storage:\n  devdax_regions:\n    - name: pm0\n      path: " + not_dax +
                          "\n      size: 2097152\n";
    std::string error;
    auto rpmad = Rpmad::Start(options, &error);
    ASSERT_NE(rpmad, nullptr) << error;
    ASSERT_TRUE(rpmad->CreateRegion("beside", kRegionSize).ok());

    const auto regions = List(*rpmad);
    ASSERT_EQ(regions.size(), 2u);
    const v1::Region &pm0 = regions[0].name() == "pm0" ? regions[0] : regions[1];
    const v1::Region &beside = regions[0].name() == "pm0" ? regions[1] : regions[0];
    EXPECT_EQ(pm0.backing(), "devdax");
    EXPECT_FALSE(pm0.healthy());
    EXPECT_TRUE(Contains(pm0.problem(), not_dax)) << pm0.problem();
    EXPECT_TRUE(Contains(pm0.problem(), "not a device-DAX device")) << pm0.problem();
    EXPECT_EQ(beside.backing(), "file");
    EXPECT_TRUE(beside.healthy()) << beside.problem();
    EXPECT_EQ(beside.persist_method(), "msync");

    v1::OpenSessionResponse session;
    EXPECT_EQ(rpmad->OpenSession("pm0", &session).error_code(),
              grpc::StatusCode::FAILED_PRECONDITION);
    v1::DeleteRegionRequest del;
    v1::DeleteRegionResponse deleted;
    del.set_name("pm0");
    del.set_force(true);
    const grpc::Status refused =
        rpmad->Regions()->DeleteRegion(Rpmad::Context().get(), del, &deleted);
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_TRUE(Contains(refused.error_message(), "storage.devdax_regions"))
        << refused.error_message();
    EXPECT_EQ(List(*rpmad).size(), 2u);
    EXPECT_EQ(WriteAndReadBack(*rpmad, "beside", Pattern(4096, 3)), "");
}

}  // namespace
}  // namespace rpma::testing

namespace rpma::testing {
namespace {

// rpmad with fail_dir_fsync.so preloaded: while `trigger` exists, fsync()
// of the pool directory (the catalog's directory sync) fails with EIO.
class CatalogSyncFailureTest : public RpmadRecoveryTest {
  protected:
    void SetUp() override {
        RpmadRecoveryTest::SetUp();
        trigger_ = TempPath("fail-fsync-now");
    }

    std::unique_ptr<Rpmad> StartFailable() {
        RpmadOptions options;
        options.pool_dir = pool_dir_;
        options.env = {"LD_PRELOAD=" + Runfile("tests/integration/fail_dir_fsync.so"),
                       "RPMA_TEST_FAIL_FSYNC_DIR=" + pool_dir_,
                       "RPMA_TEST_FAIL_FSYNC_TRIGGER=" + trigger_};
        std::string error;
        auto rpmad = Rpmad::Start(options, &error);
        EXPECT_NE(rpmad, nullptr) << error;
        return rpmad;
    }

    void FailFsync(bool fail) {
        if (fail)
            std::ofstream(trigger_) << "on";
        else
            std::filesystem::remove(trigger_);
    }

    grpc::Status Delete(const Rpmad &rpmad, const std::string &name) {
        v1::DeleteRegionRequest request;
        v1::DeleteRegionResponse response;
        request.set_name(name);
        request.set_force(true);
        return rpmad.Regions()->DeleteRegion(Rpmad::Context().get(), request, &response);
    }

    // No region half-present: every listed region is healthy and its file
    // is there, and regions/ holds no other file.
    void ExpectEveryRegionWhole(const Rpmad &rpmad) {
        std::set<std::string> listed;
        for (const v1::Region &region : List(rpmad)) {
            EXPECT_TRUE(region.healthy()) << region.name() << ": " << region.problem();
            listed.insert(region.name() + ".pmem");
        }
        std::set<std::string> files;
        for (const auto &entry : std::filesystem::directory_iterator(pool_dir_ + "/regions"))
            files.insert(entry.path().filename().string());
        EXPECT_EQ(files, listed);
    }

    std::string trigger_;
};

// Issue 24, item 1: the delete's rename of the catalog happened, its
// directory sync failed. A restart reads the new catalog, so the region must
// not be served any more: a client whose persists are acknowledged now would
// lose them when rpmad next starts and removes the file.
TEST_F(CatalogSyncFailureTest, ADeleteWhoseCatalogSyncFailsLosesNoAcknowledgedByte) {
    std::map<std::string, std::vector<std::byte>> acknowledged;
    {
        auto rpmad = StartFailable();
        ASSERT_NE(rpmad, nullptr);
        for (const char *name : {"kept", "victim"}) {
            ASSERT_TRUE(rpmad->CreateRegion(name, kRegionSize).ok());
            acknowledged[name] = Pattern(8192, name[0]);
            ASSERT_EQ(WriteAndReadBack(*rpmad, name, acknowledged[name]), "");
        }
        FailFsync(true);
        const grpc::Status deleted = Delete(*rpmad, "victim");
        FailFsync(false);
        EXPECT_FALSE(deleted.ok());
        EXPECT_TRUE(Contains(deleted.error_message(), "cannot sync directory " + pool_dir_))
            << deleted.error_message();
        EXPECT_TRUE(Contains(deleted.error_message(), "restart")) << deleted.error_message();

        // Keep writing, as a client that did not hear of the delete would.
        const auto late = Pattern(8192, 0x77);
        const std::string written = WriteAndReadBack(*rpmad, "victim", late);
        if (written.empty())
            acknowledged["victim"] = late;
        EXPECT_TRUE(Contains(written, "no region named \"victim\"")) << written;
        acknowledged["kept"] = Pattern(8192, 0x11);
        ASSERT_EQ(WriteAndReadBack(*rpmad, "kept", acknowledged["kept"]), "");
        Stop(*rpmad);
        // The operator learns of it from the log, too.
        EXPECT_TRUE(
            Contains(rpmad->process().Stderr(), "region 'victim': region \"victim\" is deleted"))
            << rpmad->process().Stderr();
    }
    std::string error;
    auto rpmad = Start(&error);
    ASSERT_NE(rpmad, nullptr) << error;
    ExpectEveryRegionWhole(*rpmad);
    std::set<std::string> listed;
    for (const v1::Region &region : List(*rpmad))
        listed.insert(region.name());
    EXPECT_EQ(listed, std::set<std::string>{"kept"});
    for (const auto &[name, bytes] : acknowledged) {
        if (name == "victim" && listed.count(name) == 0 && bytes == Pattern(8192, 'v'))
            continue;  // deleted before anything more was acknowledged
        std::vector<std::byte> read;
        ASSERT_EQ(ReadRegion(*rpmad, name, bytes.size(), &read), "")
            << "acknowledged bytes of region \"" << name << "\" are gone";
        EXPECT_EQ(read, bytes) << name;
    }
    // The restart read the disk: changes are taken again.
    EXPECT_TRUE(rpmad->CreateRegion("after", kRegionSize).ok());
}

// The mirror case: the create's catalog lists the region, its directory sync
// failed. The file must stay (the catalog never lists a region without its
// file); the region is served once a restart has read the catalog back.
TEST_F(CatalogSyncFailureTest, ACreateWhoseCatalogSyncFailsNeverLeavesARegionWithoutItsFile) {
    {
        auto rpmad = StartFailable();
        ASSERT_NE(rpmad, nullptr);
        FailFsync(true);
        const grpc::Status created = rpmad->CreateRegion("newborn", kRegionSize);
        FailFsync(false);
        EXPECT_FALSE(created.ok());
        EXPECT_TRUE(Contains(created.error_message(), "cannot sync directory " + pool_dir_))
            << created.error_message();
        EXPECT_TRUE(Contains(created.error_message(), "restart")) << created.error_message();
        // Not served before a restart: nothing written to it is acknowledged
        // while its creation is not known to be durable.
        v1::OpenSessionResponse session;
        EXPECT_NE(rpmad->OpenSession("newborn", &session).error_code(), grpc::StatusCode::OK);
        // Until a restart reads what is on disk, the pool takes no change.
        const grpc::Status refused = rpmad->CreateRegion("second", kRegionSize);
        EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
            << refused.error_message();
        EXPECT_TRUE(Contains(refused.error_message(), "restart")) << refused.error_message();
        Stop(*rpmad);
    }
    std::string error;
    auto rpmad = Start(&error);
    ASSERT_NE(rpmad, nullptr) << error;
    ExpectEveryRegionWhole(*rpmad);
    const auto regions = List(*rpmad);
    ASSERT_EQ(regions.size(), 1u);
    EXPECT_EQ(regions[0].name(), "newborn");
    EXPECT_EQ(WriteAndReadBack(*rpmad, "newborn", Pattern(4096, 4)), "");
    EXPECT_TRUE(Delete(*rpmad, "newborn").ok());
}

}  // namespace
}  // namespace rpma::testing
