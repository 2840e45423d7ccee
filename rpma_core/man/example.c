#include <librpma.h>

/* Writes len bytes of buf to the start of the server's region and
 * returns once they are persistent there; 0 or a negative RPMA_E_*
 * code. */
int write_durably(const char *addr, const char *port, void *buf,
                  size_t len) {
    struct ibv_context *ctx = NULL;
    struct rpma_peer *peer = NULL;
    struct rpma_mr_local *src = NULL;
    struct rpma_conn_req *req = NULL;
    struct rpma_conn *conn = NULL;
    struct rpma_mr_remote *dst = NULL;
    struct rpma_peer_cfg *pcfg = NULL;
    struct rpma_conn_private_data pdata;
    enum rpma_conn_event event = RPMA_CONN_UNDEFINED;
    struct rpma_cq *cq = NULL;
    struct ibv_wc wc = {0};
    size_t size = 0;
    int ret;

    if ((ret = rpma_utils_get_ibv_context(
             addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &ctx)) ||
        (ret = rpma_peer_new(ctx, &peer)) ||
        (ret = rpma_mr_reg(peer, buf, len, RPMA_MR_USAGE_WRITE_SRC,
                           &src)) ||
        (ret = rpma_conn_req_new(peer, addr, port, NULL, &req)) ||
        (ret = rpma_conn_req_connect(&req, NULL, &conn)) ||
        (ret = rpma_conn_next_event(conn, &event)))
        goto out;
    if (event != RPMA_CONN_ESTABLISHED) {
        ret = RPMA_E_PROVIDER; /* rejected or unreachable */
        goto out;
    }

    /* the server's region and its word on direct write to PMem */
    if ((ret = rpma_conn_get_private_data(conn, &pdata)) ||
        (ret = rpma_mr_get_descriptor_size(src, &size)))
        goto out;
    if (pdata.len <= size) {
        ret = RPMA_E_INVAL;
        goto out;
    }
    if ((ret = rpma_mr_remote_from_descriptor(pdata.ptr, size, &dst)) ||
        (ret = rpma_peer_cfg_from_descriptor(
             (char *)pdata.ptr + size, pdata.len - size, &pcfg)) ||
        (ret = rpma_conn_apply_remote_peer_cfg(conn, pcfg)))
        goto out;

    /* only the flush reports success; a failed write reports itself */
    if ((ret = rpma_write(conn, dst, 0, src, 0, len,
                          RPMA_F_COMPLETION_ON_ERROR, NULL)) ||
        (ret = rpma_flush(conn, dst, 0, len, RPMA_FLUSH_TYPE_PERSISTENT,
                          RPMA_F_COMPLETION_ALWAYS, NULL)) ||
        (ret = rpma_conn_get_cq(conn, &cq)))
        goto out;
    while ((ret = rpma_cq_get_wc(cq, 1, &wc, NULL)) ==
           RPMA_E_NO_COMPLETION)
        if ((ret = rpma_cq_wait(cq)))
            goto out;
    if (ret == 0 && wc.status != IBV_WC_SUCCESS)
        ret = RPMA_E_PROVIDER; /* see ibv_wc_status_str(wc.status) */

out:
    if (conn != NULL) {
        if (event == RPMA_CONN_ESTABLISHED &&
            rpma_conn_disconnect(conn) == 0)
            while (rpma_conn_next_event(conn, &event) == 0 &&
                   event != RPMA_CONN_CLOSED)
                ;
        (void)rpma_conn_delete(&conn);
    }
    (void)rpma_peer_cfg_delete(&pcfg);
    (void)rpma_mr_remote_delete(&dst);
    (void)rpma_conn_req_delete(&req);
    (void)rpma_mr_dereg(&src);
    (void)rpma_peer_delete(&peer);
    return ret;
}
