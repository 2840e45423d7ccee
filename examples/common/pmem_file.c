/*
 * pmem_file.c -- a file mapped as persistent memory with libpmem2
 */
#define _POSIX_C_SOURCE 200809L

#include "examples/common/pmem_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int pmem2_failed(const char *what) {
    fprintf(stderr, "%s: %s\n", what, pmem2_errormsg());
    return -1;
}

static int grow_file(int fd, size_t size) {
    struct stat st;
    if (fstat(fd, &st) != 0) {
        perror("fstat");
        return -1;
    }
    if ((size_t)st.st_size < size && ftruncate(fd, (off_t)size) != 0) {
        fprintf(stderr, "ftruncate to %zu bytes: %s\n", size, strerror(errno));
        return -1;
    }
    return 0;
}

/* Maps the first size bytes of fd, rounded up to the mapping alignment (grows the file). */
static int map_fd(int fd, size_t size, struct pmem2_map **map) {
    struct pmem2_config *cfg = NULL;
    struct pmem2_source *src = NULL;
    size_t alignment = 0;
    int ret = -1;
    if (pmem2_config_new(&cfg) != 0)
        return pmem2_failed("pmem2_config_new");
    if (pmem2_source_from_fd(&src, fd) != 0) {
        pmem2_failed("pmem2_source_from_fd");
        goto out;
    }
    if (pmem2_source_alignment(src, &alignment) != 0) {
        pmem2_failed("pmem2_source_alignment");
        goto out;
    }
    size = (size + alignment - 1) / alignment * alignment;
    if (grow_file(fd, size) != 0)
        goto out;
    pmem2_source_delete(&src); /* the source must see the new size */
    if (pmem2_source_from_fd(&src, fd) != 0) {
        pmem2_failed("pmem2_source_from_fd");
        goto out;
    }
    /* page granularity: accept an ordinary file too (then persisting means msync) */
    if (pmem2_config_set_required_store_granularity(cfg, PMEM2_GRANULARITY_PAGE) != 0) {
        pmem2_failed("pmem2_config_set_required_store_granularity");
        goto out;
    }
    if (pmem2_config_set_length(cfg, size) != 0) {
        pmem2_failed("pmem2_config_set_length");
        goto out;
    }
    if (pmem2_map_new(map, cfg, src) != 0) {
        pmem2_failed("pmem2_map_new");
        goto out;
    }
    ret = 0;
out:
    pmem2_source_delete(&src);
    pmem2_config_delete(&cfg);
    return ret;
}

int ex_pmem_file_map(const char *path, size_t size, struct ex_pmem_file *file) {
    memset(file, 0, sizeof(*file));
    file->fd = open(path, O_RDWR | O_CREAT, 0644);
    if (file->fd < 0) {
        fprintf(stderr, "open %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (map_fd(file->fd, size, &file->map) != 0) {
        fprintf(stderr, "cannot map %s\n", path);
        goto err;
    }
    file->addr = pmem2_map_get_address(file->map);
    file->size = size;
    file->persist = pmem2_get_persist_fn(file->map);
    return 0;
err:
    close(file->fd);
    file->fd = -1;
    return -1;
}

int ex_pmem_file_unmap(struct ex_pmem_file *file) {
    int ret = 0;
    if (file->map != NULL && pmem2_map_delete(&file->map) != 0)
        ret = pmem2_failed("pmem2_map_delete");
    if (file->fd >= 0 && close(file->fd) != 0) {
        perror("close");
        ret = -1;
    }
    file->fd = -1;
    file->addr = NULL;
    return ret;
}

int ex_file_pread(const char *path, size_t offset, void *buf, size_t len) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        fprintf(stderr, "open %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(offset + done));
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            fprintf(stderr, "pread %s at %zu: %s\n", path, offset + done,
                    n == 0 ? "unexpected end of file" : strerror(errno));
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    close(fd);
    return 0;
}
