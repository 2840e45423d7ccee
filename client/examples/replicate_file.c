/*
 * replicate_file: copies FILE into region REGION on the rpmad replicas
 * given, made durable on all of them, then reads it back from each replica
 * and compares.
 *
 *   replicate_file FILE REGION HOST:PORT [HOST:PORT...]
 *
 * The region is created with the file's size rounded up to 4 KiB when
 * missing. Exit status 0 when every replica holds the file's bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpma_client.h"

static int fail(const char *what) {
    fprintf(stderr, "replicate_file: %s: %s\n", what, rpma_client_last_error());
    return 1;
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
    struct rpma_client_options opts = {0};
    opts.create_size = (size + 4095) / 4096 * 4096;
    if (opts.create_size == 0)
        opts.create_size = 4096;
    struct rpma_client_region *region = NULL;
    int ret = 1;
    if (rpma_client_region_open((const char *const *)&argv[3], replicas, argv[2], &opts, &region) !=
        RPMA_CLIENT_OK) {
        ret = fail("open");
        goto out;
    }
    if (rpma_client_write_persist(region, 0, data, size) != RPMA_CLIENT_OK) {
        ret = fail("write");
        goto out;
    }
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
