// The workloads over the librpma API (whichever provider RPMA_PROVIDER picks;
// the tcp provider on hosts without an RNIC).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/bench_stats.h"
#include "bench/depth.h"
#include "bench/workload.h"
#include "librpma.h"

namespace rpma_bench {
namespace {

constexpr size_t kMrDescriptorSize = 21;
constexpr size_t kPrivateDataSize = kMrDescriptorSize + 1;  // + peer cfg descriptor

void Check(int ret, const char *what) {
    if (ret != 0) {
        fprintf(stderr, "rpma bench: %s: %s\n", what, rpma_err_2str(ret));
        exit(1);
    }
}

void ExpectEvent(rpma_conn *conn, rpma_conn_event expected) {
    rpma_conn_event event;
    Check(rpma_conn_next_event(conn, &event), "rpma_conn_next_event");
    if (event != expected) {
        fprintf(stderr, "rpma bench: expected '%s', got '%s'\n",
                rpma_utils_conn_event_2str(expected), rpma_utils_conn_event_2str(event));
        exit(1);
    }
}

rpma_peer *NewPeer(const std::string &addr, rpma_util_ibv_context_type type) {
    ibv_context *ctx = nullptr;
    Check(rpma_utils_get_ibv_context(addr.c_str(), type, &ctx), "rpma_utils_get_ibv_context");
    rpma_peer *peer = nullptr;
    Check(rpma_peer_new(ctx, &peer), "rpma_peer_new");
    return peer;
}

void *MapRegion(size_t size) {
    void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    memset(p, 0, size);
    return p;
}

// A file of `size` bytes, its blocks allocated and synced, mapped shared.
void *MapRegionFile(const std::string &path, size_t size) {
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || posix_fallocate(fd, 0, static_cast<off_t>(size)) != 0 || fsync(fd) != 0) {
        perror(path.c_str());
        exit(1);
    }
    void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    close(fd);
    return p;
}

// The private data of RunRpmaServer's acceptance: the region's descriptor,
// then the peer configuration's.
bool ReadBareAccept(const char *bytes, size_t length, std::string *region_descriptor,
                    std::string *peer_cfg_descriptor) {
    if (length < kPrivateDataSize)
        return false;
    region_descriptor->assign(bytes, kMrDescriptorSize);
    peer_cfg_descriptor->assign(bytes + kMrDescriptorSize, 1);
    return true;
}

// Blocks until one completion arrives on cq and checks it succeeded;
// busy_poll spins on the CQ instead of sleeping on its channel.
ibv_wc WaitOne(rpma_cq *cq, bool busy_poll = false) {
    ibv_wc wc{};
    for (;;) {
        int ret = rpma_cq_get_wc(cq, 1, &wc, nullptr);
        if (ret == 0)
            break;
        if (ret != RPMA_E_NO_COMPLETION)
            Check(ret, "rpma_cq_get_wc");
        if (!busy_poll)
            Check(rpma_cq_wait(cq), "rpma_cq_wait");
    }
    if (wc.status != IBV_WC_SUCCESS) {
        fprintf(stderr, "rpma bench: completion failed: %s\n", ibv_wc_status_str(wc.status));
        exit(1);
    }
    return wc;
}

class RpmaClient : public Client {
  public:
    RpmaClient(const std::string &addr, const std::string &port, bool busy_poll,
               const RpmaAdmission &admission)
        : busy_poll_(busy_poll) {
        peer_ = NewPeer(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE);
        buffer_ = MapRegion(kRegionSize);
        Check(rpma_mr_reg(peer_, buffer_, kRegionSize,
                          RPMA_MR_USAGE_WRITE_SRC | RPMA_MR_USAGE_READ_DST | RPMA_MR_USAGE_SEND |
                              RPMA_MR_USAGE_RECV,
                          &local_),
              "rpma_mr_reg");
        rpma_conn_cfg *cfg = nullptr;
        Check(rpma_conn_cfg_new(&cfg), "rpma_conn_cfg_new");
        Check(rpma_conn_cfg_set_sq_size(cfg, 1024), "rpma_conn_cfg_set_sq_size");
        Check(rpma_conn_cfg_set_cq_size(cfg, 256), "rpma_conn_cfg_set_cq_size");
        rpma_conn_req *req = nullptr;
        Check(rpma_conn_req_new(peer_, addr.c_str(), port.c_str(), cfg, &req), "rpma_conn_req_new");
        std::string request_data = admission.request_private_data;
        rpma_conn_private_data request_pdata{request_data.data(),
                                             static_cast<uint8_t>(request_data.size())};
        Check(rpma_conn_req_connect(&req, request_data.empty() ? nullptr : &request_pdata, &conn_),
              "rpma_conn_req_connect");
        Check(rpma_conn_cfg_delete(&cfg), "rpma_conn_cfg_delete");
        ExpectEvent(conn_, RPMA_CONN_ESTABLISHED);

        rpma_conn_private_data pdata;
        Check(rpma_conn_get_private_data(conn_, &pdata), "rpma_conn_get_private_data");
        std::string region_descriptor, peer_cfg_descriptor;
        if (!admission.read_accept(static_cast<const char *>(pdata.ptr), pdata.len,
                                   &region_descriptor, &peer_cfg_descriptor)) {
            fprintf(stderr, "rpma bench: cannot read the server's %u bytes of private data\n",
                    pdata.len);
            exit(1);
        }
        Check(rpma_mr_remote_from_descriptor(region_descriptor.data(), region_descriptor.size(),
                                             &remote_),
              "rpma_mr_remote_from_descriptor");
        rpma_peer_cfg *pcfg = nullptr;
        Check(rpma_peer_cfg_from_descriptor(peer_cfg_descriptor.data(), peer_cfg_descriptor.size(),
                                            &pcfg),
              "rpma_peer_cfg_from_descriptor");
        Check(rpma_conn_apply_remote_peer_cfg(conn_, pcfg), "rpma_conn_apply_remote_peer_cfg");
        Check(rpma_peer_cfg_delete(&pcfg), "rpma_peer_cfg_delete");
        Check(rpma_conn_get_cq(conn_, &cq_), "rpma_conn_get_cq");
    }

    ~RpmaClient() override {
        Check(rpma_conn_disconnect(conn_), "rpma_conn_disconnect");
        ExpectEvent(conn_, RPMA_CONN_CLOSED);
        Check(rpma_conn_delete(&conn_), "rpma_conn_delete");
        Check(rpma_mr_remote_delete(&remote_), "rpma_mr_remote_delete");
        Check(rpma_mr_dereg(&local_), "rpma_mr_dereg");
        munmap(buffer_, kRegionSize);
        Check(rpma_peer_delete(&peer_), "rpma_peer_delete");
    }

    std::vector<uint64_t> DurableWriteLatency(size_t size, int iterations) override {
        std::vector<uint64_t> samples;
        samples.reserve(iterations);
        for (int i = 0; i < iterations; ++i) {
            uint64_t start = NowNs();
            Check(
                rpma_write(conn_, remote_, 0, local_, 0, size, RPMA_F_COMPLETION_ON_ERROR, nullptr),
                "rpma_write");
            Check(rpma_flush(conn_, remote_, 0, size, RPMA_FLUSH_TYPE_PERSISTENT,
                             RPMA_F_COMPLETION_ALWAYS, nullptr),
                  "rpma_flush");
            WaitOne(cq_, busy_poll_);
            samples.push_back(NowNs() - start);
        }
        return samples;
    }

    // As fio's librpma_apm engine: each operation a write and a signaled
    // persistent flush of its own slot, `depth` of them posted on the one
    // connection, completions collected as they arrive (the flush's
    // op_context names the slot).
    DepthResult DurableWriteAtDepth(size_t size, int depth, int operations) override {
        if (static_cast<size_t>(depth) * size > kRegionSize) {
            fprintf(stderr, "rpma bench: depth %d x %zu bytes exceeds the region\n", depth, size);
            exit(1);
        }
        return RunAtDepth(
            depth, operations,
            [&](int slot) {
                const size_t offset = static_cast<size_t>(slot) * size;
                Check(rpma_write(conn_, remote_, offset, local_, offset, size,
                                 RPMA_F_COMPLETION_ON_ERROR, nullptr),
                      "rpma_write");
                Check(rpma_flush(conn_, remote_, offset, size, RPMA_FLUSH_TYPE_PERSISTENT,
                                 RPMA_F_COMPLETION_ALWAYS,
                                 reinterpret_cast<void *>(static_cast<uintptr_t>(slot))),
                      "rpma_flush");
            },
            [&] { return static_cast<int>(WaitOne(cq_, busy_poll_).wr_id); });
    }

    uint64_t Stream(size_t chunk, size_t total) override {
        // A signaled persistent flush every 4 MiB keeps the pipeline deep
        // while bounding what is in flight to a few flushes.
        const size_t per_flush = std::max<size_t>(1, (4 << 20) / chunk);
        const int max_flushes_in_flight = 4;
        int in_flight = 0;
        size_t offset = 0, writes = 0;
        uint64_t start = NowNs();
        for (size_t sent = 0; sent < total; sent += chunk) {
            size_t len = std::min(chunk, total - sent);
            // Cycles through as much memory as the raw TCP baseline's
            // buffer (kMaxPayload), not the whole region: the same working
            // set on both sides of the comparison.
            if (offset + len > kMaxPayload)
                offset = 0;
            Check(rpma_write(conn_, remote_, offset, local_, offset, len,
                             RPMA_F_COMPLETION_ON_ERROR, nullptr),
                  "rpma_write");
            offset += len;
            bool last = sent + chunk >= total;
            if (++writes % per_flush == 0 || last) {
                if (in_flight == max_flushes_in_flight) {
                    WaitOne(cq_, busy_poll_);
                    --in_flight;
                }
                Check(rpma_flush(conn_, remote_, 0, kRegionSize, RPMA_FLUSH_TYPE_PERSISTENT,
                                 RPMA_F_COMPLETION_ALWAYS, nullptr),
                      "rpma_flush");
                ++in_flight;
            }
        }
        for (; in_flight > 0; --in_flight)
            WaitOne(cq_, busy_poll_);
        return NowNs() - start;
    }

    std::vector<uint64_t> ReadLatency(size_t size, int iterations) override {
        std::vector<uint64_t> samples;
        samples.reserve(iterations);
        for (int i = 0; i < iterations; ++i) {
            uint64_t start = NowNs();
            Check(rpma_read(conn_, local_, 0, remote_, 0, size, RPMA_F_COMPLETION_ALWAYS, nullptr),
                  "rpma_read");
            WaitOne(cq_, busy_poll_);
            samples.push_back(NowNs() - start);
        }
        return samples;
    }

    std::vector<uint64_t> PingPong(size_t size, int iterations) override {
        std::vector<uint64_t> samples;
        samples.reserve(iterations);
        char *bytes = static_cast<char *>(buffer_);
        for (int i = 0; i < iterations; ++i) {
            uint64_t start = NowNs();
            Check(rpma_recv(conn_, local_, kMaxPayload, size, nullptr), "rpma_recv");
            Check(rpma_send(conn_, local_, 0, size, RPMA_F_COMPLETION_ON_ERROR, nullptr),
                  "rpma_send");
            ibv_wc wc = WaitOne(cq_, busy_poll_);
            // The bench's own check of the echo, outside the measured time
            // (the raw TCP client checks nothing).
            samples.push_back(NowNs() - start);
            if (wc.opcode != IBV_WC_RECV || wc.byte_len != size ||
                memcmp(bytes, bytes + kMaxPayload, size) != 0) {
                fprintf(stderr, "rpma bench: ping-pong reply does not match\n");
                exit(1);
            }
        }
        return samples;
    }

  private:
    const bool busy_poll_;
    rpma_peer *peer_ = nullptr;
    void *buffer_ = nullptr;
    rpma_mr_local *local_ = nullptr;
    rpma_mr_remote *remote_ = nullptr;
    rpma_conn *conn_ = nullptr;
    rpma_cq *cq_ = nullptr;
};

// Serves one connection: private data hands out the region; every message
// received is echoed back. Returns when the client disconnects.
void ServeOne(rpma_ep *ep, rpma_mr_local *messages, const char *pdata_bytes) {
    rpma_conn_cfg *cfg = nullptr;
    Check(rpma_conn_cfg_new(&cfg), "rpma_conn_cfg_new");
    Check(rpma_conn_cfg_set_sq_size(cfg, 64), "rpma_conn_cfg_set_sq_size");
    Check(rpma_conn_cfg_set_cq_size(cfg, 64), "rpma_conn_cfg_set_cq_size");
    rpma_conn_req *req = nullptr;
    Check(rpma_ep_next_conn_req(ep, cfg, &req), "rpma_ep_next_conn_req");
    Check(rpma_conn_cfg_delete(&cfg), "rpma_conn_cfg_delete");
    Check(rpma_conn_req_recv(req, messages, 0, kMaxPayload, nullptr), "rpma_conn_req_recv");
    rpma_conn_private_data pdata{const_cast<char *>(pdata_bytes), kPrivateDataSize};
    rpma_conn *conn = nullptr;
    Check(rpma_conn_req_connect(&req, &pdata, &conn), "rpma_conn_req_connect");
    ExpectEvent(conn, RPMA_CONN_ESTABLISHED);

    // Blocking waits, as the raw TCP server's blocking recv: the server's
    // thread sleeps in rpma_cq_wait (where the provider may drive progress
    // itself) and echoes every message. The client's disconnect flushes the
    // posted receive, which ends the loop.
    rpma_cq *cq = nullptr;
    Check(rpma_conn_get_cq(conn, &cq), "rpma_conn_get_cq");
    for (;;) {
        ibv_wc wc;
        int ret = rpma_cq_get_wc(cq, 1, &wc, nullptr);
        if (ret == RPMA_E_NO_COMPLETION) {
            Check(rpma_cq_wait(cq), "rpma_cq_wait");
            continue;
        }
        Check(ret, "rpma_cq_get_wc");
        if (wc.status == IBV_WC_WR_FLUSH_ERR)
            break;  // the client disconnected (verbs leaves the opcode undefined)
        if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV)
            continue;
        // The client sends its next message only after this echo reached
        // it, so reposting into the buffer being echoed is safe.
        Check(rpma_recv(conn, messages, 0, kMaxPayload, nullptr), "rpma_recv");
        Check(rpma_send(conn, messages, 0, wc.byte_len, RPMA_F_COMPLETION_ON_ERROR, nullptr),
              "rpma_send");
    }
    rpma_conn_event event;
    Check(rpma_conn_next_event(conn, &event), "rpma_conn_next_event");
    Check(rpma_conn_disconnect(conn), "rpma_conn_disconnect");
    Check(rpma_conn_delete(&conn), "rpma_conn_delete");
}

}  // namespace

void RunRpmaServer(const std::string &addr, const std::string &port, int ready_fd,
                   const std::string &region_file) {
    rpma_peer *peer = NewPeer(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL);
    void *region_memory =
        region_file.empty() ? MapRegion(kRegionSize) : MapRegionFile(region_file, kRegionSize);
    void *message_memory = MapRegion(kMaxPayload);
    rpma_mr_local *region = nullptr, *messages = nullptr;
    Check(rpma_mr_reg(peer, region_memory, kRegionSize,
                      RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC |
                          RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT | RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY,
                      &region),
          "rpma_mr_reg");
    Check(rpma_mr_reg(peer, message_memory, kMaxPayload, RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV,
                      &messages),
          "rpma_mr_reg");

    // The tcp provider persists on flush, so it may declare direct write to pmem.
    char pdata[kPrivateDataSize];
    Check(rpma_mr_get_descriptor(region, pdata), "rpma_mr_get_descriptor");
    rpma_peer_cfg *pcfg = nullptr;
    Check(rpma_peer_cfg_new(&pcfg), "rpma_peer_cfg_new");
    Check(rpma_peer_cfg_set_direct_write_to_pmem(pcfg, true), "set_direct_write_to_pmem");
    Check(rpma_peer_cfg_get_descriptor(pcfg, pdata + kMrDescriptorSize),
          "rpma_peer_cfg_get_descriptor");
    Check(rpma_peer_cfg_delete(&pcfg), "rpma_peer_cfg_delete");

    rpma_ep *ep = nullptr;
    Check(rpma_ep_listen(peer, addr.c_str(), port.c_str(), &ep), "rpma_ep_listen");
    dprintf(ready_fd, "ready\n");
    for (;;)
        ServeOne(ep, messages, pdata);
}

std::unique_ptr<Client> ConnectRpma(const std::string &addr, const std::string &port,
                                    bool busy_poll) {
    return ConnectRpma(addr, port, busy_poll, RpmaAdmission{"", ReadBareAccept});
}

std::unique_ptr<Client> ConnectRpma(const std::string &addr, const std::string &port,
                                    bool busy_poll, const RpmaAdmission &admission) {
    return std::make_unique<RpmaClient>(addr, port, busy_poll, admission);
}

}  // namespace rpma_bench
