/*
 * example_conn.c -- the connection boilerplate every example shares
 */
#define _POSIX_C_SOURCE 200809L

#include "examples/common/example_conn.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void ex_announce_ready(void) {
    printf("ready\n");
    fflush(stdout);
}

int ex_report(const char *what, int ret) {
    fprintf(stderr, "%s: %s\n", what, rpma_err_2str(ret));
    return ret;
}

void *ex_alloc_aligned(size_t size) {
    long page = sysconf(_SC_PAGESIZE);
    void *mem = NULL;
    int err = posix_memalign(&mem, page > 0 ? (size_t)page : 4096, size);
    if (err != 0) {
        fprintf(stderr, "posix_memalign(%zu): %s\n", size, strerror(err));
        return NULL;
    }
    memset(mem, 0, size);
    return mem;
}

int ex_peer_new(const char *addr, enum rpma_util_ibv_context_type type,
                struct rpma_peer **peer_ptr) {
    struct ibv_context *ctx = NULL;
    int ret = rpma_utils_get_ibv_context(addr, type, &ctx);
    if (ret != 0)
        return ex_report("rpma_utils_get_ibv_context", ret);
    ret = rpma_peer_new(ctx, peer_ptr);
    if (ret != 0)
        return ex_report("rpma_peer_new", ret);
    return 0;
}

int ex_mr_dereg(int ret, struct rpma_mr_local **mr_ptr) {
    if (*mr_ptr == NULL)
        return ret;
    int dereg = rpma_mr_dereg(mr_ptr);
    if (dereg != 0)
        ex_report("rpma_mr_dereg", dereg);
    return ret != 0 ? ret : dereg;
}

int ex_release(int ret, struct rpma_ep **ep_ptr, struct rpma_peer **peer_ptr) {
    if (ep_ptr != NULL && *ep_ptr != NULL) {
        int shut = rpma_ep_shutdown(ep_ptr);
        if (shut != 0)
            ret = ex_report("rpma_ep_shutdown", shut);
    }
    if (peer_ptr != NULL && *peer_ptr != NULL) {
        int del = rpma_peer_delete(peer_ptr);
        if (del != 0)
            ret = ex_report("rpma_peer_delete", del);
    }
    return ret == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int64_t ex_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ex_poll_readable(struct pollfd *fds, size_t nfds, int timeout_ms, const char *what) {
    for (size_t i = 0; i < nfds; i++)
        fds[i].events = POLLIN;
    int64_t deadline = ex_now_ms() + timeout_ms;
    for (;;) {
        int left = timeout_ms < 0 ? -1 : (int)(deadline - ex_now_ms());
        if (timeout_ms >= 0 && left < 0)
            left = 0;
        int n = poll(fds, (nfds_t)nfds, left);
        if (n > 0)
            return 0;
        if (n == 0) {
            fprintf(stderr, "timed out after %d ms waiting for %s\n", timeout_ms, what);
            return 1;
        }
        if (errno != EINTR) {
            perror("poll");
            return -1;
        }
    }
}

/* Waits until fd is readable; timeout_ms < 0 waits forever. 0: readable, 1: timed out. */
static int wait_readable(int fd, int timeout_ms, const char *what) {
    struct pollfd pfd = {.fd = fd};
    return ex_poll_readable(&pfd, 1, timeout_ms, what);
}

int ex_private_data_check(const struct rpma_conn_private_data *pdata, size_t size,
                          const char *what) {
    if (pdata->ptr == NULL || pdata->len < size) {
        fprintf(stderr, "%u bytes of private data, expected %s (%zu bytes)\n",
                pdata->ptr == NULL ? 0u : (unsigned)pdata->len, what, size);
        return -1;
    }
    return 0;
}

int ex_next_event(struct rpma_conn *conn, int timeout_ms, enum rpma_conn_event *event) {
    int fd;
    int ret = rpma_conn_get_event_fd(conn, &fd);
    if (ret != 0)
        return ex_report("rpma_conn_get_event_fd", ret);
    for (;;) {
        if (wait_readable(fd, timeout_ms, "a connection event") != 0)
            return -1;
        ret = rpma_conn_next_event(conn, event);
        if (ret != RPMA_E_NO_EVENT)
            break;
    }
    if (ret != 0)
        return ex_report("rpma_conn_next_event", ret);
    return 0;
}

int ex_expect_event(struct rpma_conn *conn, enum rpma_conn_event expected) {
    enum rpma_conn_event event = RPMA_CONN_UNDEFINED;
    int ret = ex_next_event(conn, EX_TIMEOUT_MS, &event);
    if (ret != 0)
        return ret;
    if (event != expected) {
        fprintf(stderr, "expected connection event %s, got %s\n",
                rpma_utils_conn_event_2str(expected), rpma_utils_conn_event_2str(event));
        return -1;
    }
    return 0;
}

int ex_conn_req_connect(struct rpma_conn_req **req_ptr, const struct rpma_conn_private_data *pdata,
                        struct rpma_conn **conn_ptr) {
    int ret = rpma_conn_req_connect(req_ptr, pdata, conn_ptr);
    if (ret != 0)
        return ex_report("rpma_conn_req_connect", ret);
    ret = ex_expect_event(*conn_ptr, RPMA_CONN_ESTABLISHED);
    if (ret != 0)
        (void)rpma_conn_delete(conn_ptr);
    return ret;
}

int ex_client_connect(struct rpma_peer *peer, const char *addr, const char *port,
                      const struct rpma_conn_cfg *cfg, const struct rpma_conn_private_data *pdata,
                      struct rpma_conn **conn_ptr) {
    struct rpma_conn_req *req = NULL;
    int ret = rpma_conn_req_new(peer, addr, port, cfg, &req);
    if (ret != 0)
        return ex_report("rpma_conn_req_new", ret);
    return ex_conn_req_connect(&req, pdata, conn_ptr);
}

int ex_server_accept(struct rpma_ep *ep, const struct rpma_conn_cfg *cfg,
                     const struct rpma_conn_private_data *pdata, struct rpma_conn **conn_ptr) {
    struct rpma_conn_req *req = NULL;
    int ret = rpma_ep_next_conn_req(ep, cfg, &req);
    if (ret != 0)
        return ex_report("rpma_ep_next_conn_req", ret);
    return ex_conn_req_connect(&req, pdata, conn_ptr);
}

int ex_disconnect(struct rpma_conn **conn_ptr) {
    int ret = rpma_conn_disconnect(*conn_ptr);
    if (ret != 0)
        ex_report("rpma_conn_disconnect", ret);
    else
        ret = ex_expect_event(*conn_ptr, RPMA_CONN_CLOSED);
    int del = rpma_conn_delete(conn_ptr);
    if (del != 0)
        return ex_report("rpma_conn_delete", del);
    return ret;
}

int ex_wait_closed(struct rpma_conn **conn_ptr) {
    enum rpma_conn_event event = RPMA_CONN_UNDEFINED;
    /* the client decides how long it works */
    int ret = ex_next_event(*conn_ptr, -1, &event);
    if (ret == 0 && event != RPMA_CONN_CLOSED) {
        fprintf(stderr, "expected connection event %s, got %s\n",
                rpma_utils_conn_event_2str(RPMA_CONN_CLOSED), rpma_utils_conn_event_2str(event));
        ret = -1;
    }
    int disc = rpma_conn_disconnect(*conn_ptr);
    if (disc != 0 && ret == 0)
        ret = ex_report("rpma_conn_disconnect", disc);
    int del = rpma_conn_delete(conn_ptr);
    if (del != 0 && ret == 0)
        ret = ex_report("rpma_conn_delete", del);
    return ret;
}

int ex_next_completion(struct rpma_cq *cq, int timeout_ms, struct ibv_wc *wc) {
    int fd;
    int ret = rpma_cq_get_fd(cq, &fd);
    if (ret != 0)
        return ex_report("rpma_cq_get_fd", ret);
    int64_t deadline = ex_now_ms() + timeout_ms;
    for (;;) {
        /* a completion may already be there: its event was consumed by an earlier wait */
        ret = rpma_cq_get_wc(cq, 1, wc, NULL);
        if (ret == 0)
            return 0;
        if (ret != RPMA_E_NO_COMPLETION)
            return ex_report("rpma_cq_get_wc", ret);
        int left = -1;
        if (timeout_ms >= 0) {
            int64_t rest = deadline - ex_now_ms();
            left = rest > 0 ? (int)rest : 0;
        }
        if (wait_readable(fd, left, "a completion") != 0)
            return -1;
        ret = rpma_cq_wait(cq);
        if (ret != 0 && ret != RPMA_E_NO_COMPLETION)
            return ex_report("rpma_cq_wait", ret);
    }
}

int ex_wait_completion(struct rpma_cq *cq, const void *op_context) {
    struct ibv_wc wc;
    int ret = ex_next_completion(cq, EX_TIMEOUT_MS, &wc);
    if (ret != 0)
        return ret;
    if (wc.status != IBV_WC_SUCCESS) {
        fprintf(stderr, "operation %#" PRIx64 " failed: %s\n", wc.wr_id,
                ibv_wc_status_str(wc.status));
        return -1;
    }
    if (wc.wr_id != (uintptr_t)op_context) {
        fprintf(stderr, "completion of operation %#" PRIx64 " arrived, expected %p\n", wc.wr_id,
                op_context);
        return -1;
    }
    return 0;
}

int ex_pmem_peer_cfg_new(struct rpma_peer_cfg **pcfg_ptr) {
    int ret = rpma_peer_cfg_new(pcfg_ptr);
    if (ret != 0)
        return ex_report("rpma_peer_cfg_new", ret);
    ret = rpma_peer_cfg_set_direct_write_to_pmem(*pcfg_ptr, true);
    if (ret != 0) {
        (void)rpma_peer_cfg_delete(pcfg_ptr);
        return ex_report("rpma_peer_cfg_set_direct_write_to_pmem", ret);
    }
    return 0;
}

int ex_descriptors_pack(const struct rpma_mr_local *mr, const struct rpma_peer_cfg *pcfg,
                        struct ex_descriptors *desc, struct rpma_conn_private_data *pdata) {
    size_t mr_size = 0;
    size_t pcfg_size = 0;
    int ret = rpma_mr_get_descriptor_size(mr, &mr_size);
    if (ret != 0)
        return ex_report("rpma_mr_get_descriptor_size", ret);
    if (pcfg != NULL) {
        ret = rpma_peer_cfg_get_descriptor_size(pcfg, &pcfg_size);
        if (ret != 0)
            return ex_report("rpma_peer_cfg_get_descriptor_size", ret);
    }
    if (mr_size + pcfg_size > sizeof(desc->bytes)) {
        fprintf(stderr, "descriptors (%zu + %zu bytes) do not fit the private data\n", mr_size,
                pcfg_size);
        return -1;
    }
    memset(desc, 0, sizeof(*desc));
    desc->mr_desc_size = (uint8_t)mr_size;
    desc->pcfg_desc_size = (uint8_t)pcfg_size;
    ret = rpma_mr_get_descriptor(mr, desc->bytes);
    if (ret != 0)
        return ex_report("rpma_mr_get_descriptor", ret);
    if (pcfg != NULL) {
        ret = rpma_peer_cfg_get_descriptor(pcfg, desc->bytes + mr_size);
        if (ret != 0)
            return ex_report("rpma_peer_cfg_get_descriptor", ret);
    }
    pdata->ptr = desc;
    pdata->len = (uint8_t)(offsetof(struct ex_descriptors, bytes) + mr_size + pcfg_size);
    return 0;
}

int ex_descriptors_decode(const struct rpma_conn_private_data *pdata,
                          struct rpma_mr_remote **mr_ptr, struct rpma_peer_cfg **pcfg_ptr) {
    struct ex_descriptors desc;
    const size_t header = offsetof(struct ex_descriptors, bytes);
    if (ex_private_data_check(pdata, header, "the server's descriptors") != 0)
        return -1;
    /* whatever follows the descriptors (rdma_cm's padding) is not ours to read */
    size_t len = pdata->len < sizeof(desc) ? pdata->len : sizeof(desc);
    memset(&desc, 0, sizeof(desc));
    memcpy(&desc, pdata->ptr, len);
    if (header + desc.mr_desc_size + desc.pcfg_desc_size > len) {
        fprintf(stderr, "the server's descriptors are truncated\n");
        return -1;
    }
    if (pcfg_ptr != NULL && desc.pcfg_desc_size == 0) {
        fprintf(stderr, "the server sent no peer configuration\n");
        return -1;
    }
    int ret = rpma_mr_remote_from_descriptor(desc.bytes, desc.mr_desc_size, mr_ptr);
    if (ret != 0)
        return ex_report("rpma_mr_remote_from_descriptor", ret);
    if (pcfg_ptr == NULL)
        return 0;
    ret = rpma_peer_cfg_from_descriptor(desc.bytes + desc.mr_desc_size, desc.pcfg_desc_size,
                                        pcfg_ptr);
    if (ret != 0) {
        (void)rpma_mr_remote_delete(mr_ptr);
        return ex_report("rpma_peer_cfg_from_descriptor", ret);
    }
    return 0;
}

int ex_descriptors_unpack(const struct rpma_conn *conn, struct rpma_mr_remote **mr_ptr,
                          struct rpma_peer_cfg **pcfg_ptr) {
    struct rpma_conn_private_data pdata;
    int ret = rpma_conn_get_private_data(conn, &pdata);
    if (ret != 0)
        return ex_report("rpma_conn_get_private_data", ret);
    return ex_descriptors_decode(&pdata, mr_ptr, pcfg_ptr);
}
