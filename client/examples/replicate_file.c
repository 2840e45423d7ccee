/*
 * replicate_file: copies FILE into region REGION on the rpmad replicas
 * given, made durable on all of them, then reads it back from each replica
 * and compares.
 *
 *   replicate_file FILE REGION HOST:PORT [HOST:PORT...]
 *
 * The region is created with the file's size rounded up to 4 KiB when
 * missing. The file goes in 64 KiB pieces, all in flight at once
 * (asynchronous writes), their completions awaited with poll(2) on the
 * region's fd as an event loop would. Exit status 0 when every replica
 * holds the file's bytes.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpma_client.h"

static int fail(const char *what) {
    fprintf(stderr, "replicate_file: %s: %s\n", what, rpma_client_last_error());
    return 1;
}

/* Writes data[0, size) in pieces, all submitted at once, each made durable;
 * 0 once every piece completed, 1 (and why on stderr) otherwise. */
static int write_pieces(struct rpma_client_region *region, const char *data, size_t size) {
    const size_t piece = 64 * 1024;
    size_t pending = 0;
    for (size_t off = 0; off < size; off += piece, ++pending) {
        const size_t len = size - off < piece ? size - off : piece;
        /* user_data: which piece, for the message below. */
        if (rpma_client_write_persist_async(region, off, data + off, len,
                                            (void *)(uintptr_t)(off / piece)) != RPMA_CLIENT_OK)
            return fail("write");
    }
    struct pollfd readable = {.fd = rpma_client_poll_fd(region), .events = POLLIN};
    if (readable.fd < 0)
        return fail("poll fd");
    int ret = 0;
    while (pending > 0) {
        if (poll(&readable, 1, -1) < 0 && errno != EINTR) {
            perror("replicate_file: poll");
            return 1;
        }
        struct rpma_client_completion done[16];
        const int n = rpma_client_poll(region, done, 16);
        for (int i = 0; i < n; ++i, --pending) {
            if (done[i].status != RPMA_CLIENT_OK) {
                fprintf(stderr, "replicate_file: write of piece %zu: %s\n",
                        (size_t)(uintptr_t)done[i].user_data, done[i].message);
                ret = 1;
            }
        }
    }
    return ret;
}

static char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *data = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)n + 1)) != NULL &&
            fread(data, 1, (size_t)n, f) != (size_t)n) {
            free(data);
            data = NULL;
        }
        *size = n >= 0 ? (size_t)n : 0;
    }
    fclose(f);
    return data;
}

int main(int argc, char *argv[]) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s FILE REGION HOST:PORT [HOST:PORT...]\n", argv[0]);
        return 2;
    }
    size_t size = 0;
    char *data = read_file(argv[1], &size);
    if (data == NULL) {
        perror(argv[1]);
        return 1;
    }
    const size_t replicas = (size_t)(argc - 3);
    struct rpma_client_open_options opts = {.size = sizeof opts};
    opts.create_size = (size + 4095) / 4096 * 4096;
    if (opts.create_size == 0)
        opts.create_size = 4096;
    struct rpma_client_region *region = NULL;
    int ret = 1;
    if (rpma_client_region_open_ex((const char *const *)&argv[3], replicas, argv[2], &opts,
                                   &region) != RPMA_CLIENT_OK) {
        ret = fail("open");
        goto out;
    }
    if (write_pieces(region, data, size) != 0)
        goto out;
    char *back = malloc(size + 1);
    ret = back == NULL;
    for (size_t r = 0; r < replicas && ret == 0; ++r) {
        if (rpma_client_read(region, r, 0, back, size) != RPMA_CLIENT_OK) {
            ret = fail("read back");
        } else if (memcmp(back, data, size) != 0) {
            fprintf(stderr, "replicate_file: replica %zu (%s) differs\n", r, argv[3 + r]);
            ret = 1;
        } else {
            printf("replica %zu (%s): %zu bytes verified\n", r, argv[3 + r], size);
        }
    }
    free(back);
out:
    rpma_client_region_close(region);
    free(data);
    return ret;
}
