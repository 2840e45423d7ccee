/*
 * server.c -- multi-client example, server: one thread, one epoll loop over the endpoint's
 * fd, every connection's event fd and every connection's completion fd, all non-blocking.
 * Each client gets its own slot of memory; when a client reports it is done (a message), the
 * server checks the slot. The server exits after the expected number of clients has come
 * and gone; it fails if any of them did not leave a correct slot behind.
 *
 * usage: server <addr> <port> <clients>
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "examples/06-multi-client-epoll/protocol.h"
#include "examples/common/example_conn.h"

enum source { SOURCE_ENDPOINT, SOURCE_CONN_EVENTS, SOURCE_COMPLETIONS };

struct client;

/* what an epoll event points at */
struct watch {
    enum source source;
    struct client *client; /* NULL for the endpoint */
};

struct client {
    uint32_t id;
    uint8_t *slot;        /* SLOT_SIZE bytes the client writes and reads */
    struct done_msg *msg; /* where the client's message lands */
    struct rpma_mr_local *slot_mr;
    struct rpma_mr_local *msg_mr;
    struct rpma_conn *conn;
    struct rpma_cq *cq;
    int event_fd;
    int cq_fd;
    struct watch events;
    struct watch completions;
    bool verified;
    bool gone;                /* disconnected; freed after the current epoll round */
    struct client *next_gone; /* in struct server's gone list */
};

struct server {
    struct rpma_peer *peer;
    struct rpma_ep *ep;
    int epoll_fd;
    unsigned expected; /* clients to serve */
    unsigned accepted;
    unsigned finished;
    unsigned failed;
    bool stop;           /* something failed that the loop cannot get past */
    struct client *gone; /* clients to free once no epoll event of this round can name them */
};

static int set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        perror("fcntl(O_NONBLOCK)");
        return -1;
    }
    return 0;
}

static int watch_fd(int epoll_fd, int fd, struct watch *watch) {
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = watch};
    if (set_nonblocking(fd) != 0)
        return -1;
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        perror("epoll_ctl(ADD)");
        return -1;
    }
    return 0;
}

static void unwatch_fd(int epoll_fd, int fd) {
    if (fd >= 0 && epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, NULL) != 0)
        perror("epoll_ctl(DEL)");
}

static void client_free(struct client *c) {
    (void)ex_mr_dereg(0, &c->slot_mr);
    (void)ex_mr_dereg(0, &c->msg_mr);
    free(c->slot);
    free(c->msg);
    free(c);
}

static struct client *client_new(struct rpma_peer *peer, uint32_t id) {
    struct client *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        perror("calloc");
        return NULL;
    }
    c->id = id;
    c->event_fd = -1;
    c->cq_fd = -1;
    c->events = (struct watch){SOURCE_CONN_EVENTS, c};
    c->completions = (struct watch){SOURCE_COMPLETIONS, c};
    c->slot = ex_alloc_aligned(SLOT_SIZE);
    c->msg = ex_alloc_aligned(sizeof(*c->msg));
    if (c->slot == NULL || c->msg == NULL)
        goto err;
    int ret = rpma_mr_reg(peer, c->slot, SLOT_SIZE,
                          RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC, &c->slot_mr);
    if (ret == 0)
        ret = rpma_mr_reg(peer, c->msg, sizeof(*c->msg), RPMA_MR_USAGE_RECV, &c->msg_mr);
    if (ret != 0) {
        ex_report("rpma_mr_reg", ret);
        goto err;
    }
    return c;
err:
    client_free(c);
    return NULL;
}

/* The client's id, sent as its private data. */
static int request_client_id(const struct rpma_conn_req *req, uint32_t *id) {
    struct rpma_conn_private_data pdata;
    int ret = rpma_conn_req_get_private_data(req, &pdata);
    if (ret != 0)
        return ex_report("rpma_conn_req_get_private_data", ret);
    if (ex_private_data_check(&pdata, 1, "a client's id") != 0)
        return -1;
    *id = *(const uint8_t *)pdata.ptr;
    return 0;
}

/* Accepts one request: a slot for the client, a receive for its message, the descriptor. */
static int accept_client(struct server *s, struct rpma_conn_req *req) {
    uint32_t id = 0;
    struct client *c = NULL;
    int ret = request_client_id(req, &id);
    if (ret == 0 && (c = client_new(s->peer, id)) == NULL)
        ret = -1;
    if (ret != 0) {
        (void)rpma_conn_req_delete(&req); /* rejects it */
        return ret;
    }
    /* posted before accepting, so the message can never arrive before its buffer */
    ret = rpma_conn_req_recv(req, c->msg_mr, 0, sizeof(*c->msg), c);
    if (ret != 0) {
        ex_report("rpma_conn_req_recv", ret);
        (void)rpma_conn_req_delete(&req);
        client_free(c);
        return ret;
    }
    struct ex_descriptors desc;
    struct rpma_conn_private_data pdata;
    ret = ex_descriptors_pack(c->slot_mr, NULL, &desc, &pdata);
    if (ret != 0) {
        (void)rpma_conn_req_delete(&req);
        client_free(c);
        return ret;
    }
    ret = rpma_conn_req_connect(&req, &pdata, &c->conn);
    if (ret != 0) {
        client_free(c);
        return ex_report("rpma_conn_req_connect", ret);
    }
    if ((ret = rpma_conn_get_event_fd(c->conn, &c->event_fd)) != 0 ||
        (ret = rpma_conn_get_cq(c->conn, &c->cq)) != 0 ||
        (ret = rpma_cq_get_fd(c->cq, &c->cq_fd)) != 0) {
        ex_report("getting the connection's fds", ret);
        ret = -1;
    }
    if (ret == 0 && (watch_fd(s->epoll_fd, c->event_fd, &c->events) != 0 ||
                     watch_fd(s->epoll_fd, c->cq_fd, &c->completions) != 0))
        ret = -1;
    if (ret != 0) {
        unwatch_fd(s->epoll_fd, c->event_fd);
        (void)rpma_conn_disconnect(c->conn);
        (void)rpma_conn_delete(&c->conn);
        client_free(c);
        return ret;
    }
    printf("server: client %u connected\n", (unsigned)id);
    return 0;
}

/* Takes every pending request; stops watching the endpoint once all clients came. */
static void on_endpoint(struct server *s) {
    for (;;) {
        struct rpma_conn_req *req = NULL;
        int ret = rpma_ep_next_conn_req(s->ep, NULL, &req);
        if (ret == RPMA_E_NO_EVENT)
            return;
        if (ret != 0) {
            ex_report("rpma_ep_next_conn_req", ret);
            s->failed++;
            s->stop = true;
            return;
        }
        /* a refused client counts as served: it will not come back */
        if (accept_client(s, req) != 0) {
            s->failed++;
            s->finished++;
        }
        if (++s->accepted == s->expected) {
            int fd;
            if (rpma_ep_get_fd(s->ep, &fd) == 0)
                unwatch_fd(s->epoll_fd, fd);
            return;
        }
    }
}

static void on_message(struct server *s, struct client *c, const struct ibv_wc *wc) {
    if (wc->opcode != IBV_WC_RECV || wc->byte_len != sizeof(*c->msg) ||
        c->msg->client_id != c->id || c->msg->bytes_written != SLOT_SIZE) {
        fprintf(stderr, "server: client %u sent an unexpected message\n", (unsigned)c->id);
        s->failed++;
        return;
    }
    /* the message came after the client's writes on the same connection: they are done */
    if (check_slot(c->id, c->slot, 0, SLOT_SIZE) != 0) {
        s->failed++;
        return;
    }
    c->verified = true;
    printf("server: client %u is done, its %d bytes are right\n", (unsigned)c->id, SLOT_SIZE);
}

/* Collects every pending completion of the client's connection. */
static void drain_completions(struct server *s, struct client *c) {
    for (;;) {
        struct ibv_wc wc;
        int ret = rpma_cq_get_wc(c->cq, 1, &wc, NULL);
        if (ret == RPMA_E_NO_COMPLETION)
            return;
        if (ret != 0) {
            ex_report("rpma_cq_get_wc", ret);
            s->failed++;
            return;
        }
        if (wc.status != IBV_WC_SUCCESS) {
            fprintf(stderr, "server: client %u: receive failed: %s\n", (unsigned)c->id,
                    ibv_wc_status_str(wc.status));
            s->failed++;
            continue;
        }
        on_message(s, c, &wc);
    }
}

static void on_completions(struct server *s, struct client *c) {
    /* acknowledge and re-arm first: completions from now on raise a new event */
    int ret = rpma_cq_wait(c->cq);
    if (ret != 0 && ret != RPMA_E_NO_COMPLETION) {
        ex_report("rpma_cq_wait", ret);
        s->failed++;
    }
    drain_completions(s, c);
}

static void finish_client(struct server *s, struct client *c) {
    drain_completions(s, c); /* the message may still wait next to the CLOSED event */
    unwatch_fd(s->epoll_fd, c->event_fd);
    unwatch_fd(s->epoll_fd, c->cq_fd);
    int ret = rpma_conn_disconnect(c->conn);
    if (ret != 0)
        ex_report("rpma_conn_disconnect", ret);
    int del = rpma_conn_delete(&c->conn);
    if (del != 0)
        ex_report("rpma_conn_delete", del);
    if (!c->verified) {
        fprintf(stderr, "server: client %u left without finishing\n", (unsigned)c->id);
        s->failed++;
    } else if (ret != 0 || del != 0) {
        s->failed++;
    }
    printf("server: client %u disconnected\n", (unsigned)c->id);
    c->gone = true;
    c->next_gone = s->gone;
    s->gone = c;
    s->finished++;
}

static void on_conn_events(struct server *s, struct client *c) {
    for (;;) {
        enum rpma_conn_event event;
        int ret = rpma_conn_next_event(c->conn, &event);
        if (ret == RPMA_E_NO_EVENT)
            return;
        if (ret != 0) {
            ex_report("rpma_conn_next_event", ret);
            s->failed++;
            finish_client(s, c);
            return;
        }
        if (event == RPMA_CONN_ESTABLISHED)
            continue;
        if (event != RPMA_CONN_CLOSED) {
            fprintf(stderr, "server: client %u: unexpected event %s\n", (unsigned)c->id,
                    rpma_utils_conn_event_2str(event));
            s->failed++;
        }
        finish_client(s, c);
        return;
    }
}

static void run(struct server *s) {
    while (!s->stop && s->finished < s->expected) {
        struct epoll_event events[16];
        int n = epoll_wait(s->epoll_fd, events, 16, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("epoll_wait");
            s->failed++;
            s->stop = true;
            return;
        }
        for (int i = 0; i < n; i++) {
            struct watch *w = events[i].data.ptr;
            if (w->source == SOURCE_ENDPOINT)
                on_endpoint(s);
            else if (w->client->gone)
                continue; /* closed earlier in this round */
            else if (w->source == SOURCE_COMPLETIONS)
                on_completions(s, w->client);
            else
                on_conn_events(s, w->client);
        }
        while (s->gone != NULL) {
            struct client *c = s->gone;
            s->gone = c->next_gone;
            client_free(c);
        }
    }
}

int main(int argc, char *argv[]) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s <addr> <port> <clients>\n", argv[0]);
        return EXIT_FAILURE;
    }
    const char *addr = argv[1];
    const char *port = argv[2];
    int clients = atoi(argv[3]);
    if (clients < 1 || clients > MAX_CLIENTS) {
        fprintf(stderr, "clients must be 1..%d\n", MAX_CLIENTS);
        return EXIT_FAILURE;
    }

    struct server s = {.epoll_fd = -1, .expected = (unsigned)clients};
    struct watch endpoint = {SOURCE_ENDPOINT, NULL};
    int ret = ex_peer_new(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &s.peer);
    if (ret != 0)
        return EXIT_FAILURE;
    ret = rpma_ep_listen(s.peer, addr, port, &s.ep);
    if (ret != 0)
        return ex_release(ex_report("rpma_ep_listen", ret), &s.ep, &s.peer);
    int ep_fd = -1;
    if ((ret = rpma_ep_get_fd(s.ep, &ep_fd)) != 0)
        return ex_release(ex_report("rpma_ep_get_fd", ret), &s.ep, &s.peer);
    s.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (s.epoll_fd < 0) {
        perror("epoll_create1");
        return ex_release(-1, &s.ep, &s.peer);
    }
    if (watch_fd(s.epoll_fd, ep_fd, &endpoint) != 0) {
        close(s.epoll_fd);
        return ex_release(-1, &s.ep, &s.peer);
    }
    ex_announce_ready();

    run(&s);

    close(s.epoll_fd);
    if (s.failed == 0)
        printf("server: all %u clients served\n", s.expected);
    else
        fprintf(stderr, "server: %u failures\n", s.failed);
    return ex_release(s.failed == 0 ? 0 : -1, &s.ep, &s.peer);
}
