#include "rpma_core/src/provider/verbs/verbs_cm_event.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "rpma_core/src/provider/verbs/verbs_conn_param.h"

namespace rpma::provider::verbs {
namespace {

rdma_cm_event Event(rdma_cm_event_type type, int status = 0) {
    rdma_cm_event event{};
    event.event = type;
    event.status = status;
    return event;
}

TEST(CmEvent, MapsEveryEventAsLibrpmaDoes) {
    struct Case {
        rdma_cm_event_type in;
        CmEventType out;
    };
    const Case cases[] = {
        {RDMA_CM_EVENT_ESTABLISHED, CmEventType::kEstablished},
        {RDMA_CM_EVENT_REJECTED, CmEventType::kRejected},
        {RDMA_CM_EVENT_ADDR_ERROR, CmEventType::kUnreachable},
        {RDMA_CM_EVENT_ROUTE_ERROR, CmEventType::kUnreachable},
        {RDMA_CM_EVENT_UNREACHABLE, CmEventType::kUnreachable},
        {RDMA_CM_EVENT_CONNECT_ERROR, CmEventType::kConnectError},
        {RDMA_CM_EVENT_DEVICE_REMOVAL, CmEventType::kDeviceRemoval},
        {RDMA_CM_EVENT_DISCONNECTED, CmEventType::kDisconnected},
        {RDMA_CM_EVENT_TIMEWAIT_EXIT, CmEventType::kTimewaitExit},
        {RDMA_CM_EVENT_ADDR_RESOLVED, CmEventType::kOther},
        {RDMA_CM_EVENT_ROUTE_RESOLVED, CmEventType::kOther},
        {RDMA_CM_EVENT_CONNECT_REQUEST, CmEventType::kOther},
        {RDMA_CM_EVENT_CONNECT_RESPONSE, CmEventType::kOther},
        {RDMA_CM_EVENT_ADDR_CHANGE, CmEventType::kOther},
        {RDMA_CM_EVENT_MULTICAST_JOIN, CmEventType::kOther},
    };
    for (const Case &c : cases)
        EXPECT_EQ(ToCmEventType(c.in), c.out) << rdma_event_str(c.in);
}

TEST(CmEvent, PrivateDataIsCopiedVerbatimAtTheReportedLength) {
    // What the IB CM delivers: the sender's bytes, then zero padding up to
    // the message field (56 bytes in a request). All of it is handed on.
    std::vector<uint8_t> wire(56, 0);
    const std::string sent = "token:1234";
    std::copy(sent.begin(), sent.end(), wire.begin());
    rdma_cm_event event = Event(RDMA_CM_EVENT_CONNECT_REQUEST);
    event.param.conn.private_data = wire.data();
    event.param.conn.private_data_len = static_cast<uint8_t>(wire.size());

    std::vector<uint8_t> copy = PrivateDataOf(event);
    EXPECT_EQ(copy, wire);
    EXPECT_NE(copy.data(), wire.data());
}

TEST(CmEvent, NoPrivateDataGivesAnEmptyCopy) {
    rdma_cm_event event = Event(RDMA_CM_EVENT_ESTABLISHED);
    EXPECT_TRUE(PrivateDataOf(event).empty());
    uint8_t byte = 7;
    event.param.conn.private_data = &byte;  // a pointer but no length
    EXPECT_TRUE(PrivateDataOf(event).empty());
}

TEST(CmEvent, ResolutionErrorsCarryTheKernelsReason) {
    EXPECT_EQ(EventError(Event(RDMA_CM_EVENT_ADDR_ERROR, -ETIMEDOUT)), ETIMEDOUT);
    EXPECT_EQ(EventError(Event(RDMA_CM_EVENT_ADDR_ERROR, -ENODEV)), ENODEV);
    EXPECT_EQ(EventError(Event(RDMA_CM_EVENT_ROUTE_ERROR, -ENETUNREACH)), ENETUNREACH);
    EXPECT_EQ(EventError(Event(RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT)), ETIMEDOUT);
}

TEST(CmEvent, ResolutionErrorsWithoutAReasonAreUnreachable) {
    EXPECT_EQ(EventError(Event(RDMA_CM_EVENT_ADDR_ERROR, 0)), EHOSTUNREACH);
    EXPECT_EQ(EventError(Event(RDMA_CM_EVENT_ROUTE_ERROR, 0)), EHOSTUNREACH);
}

TEST(CmEvent, OtherEndingsHaveTheirOwnErrno) {
    // A positive status of REJECTED is an IB CM reason, not an errno.
    EXPECT_EQ(EventError(Event(RDMA_CM_EVENT_REJECTED, 8)), ECONNREFUSED);
    EXPECT_EQ(EventError(Event(RDMA_CM_EVENT_DEVICE_REMOVAL)), ENODEV);
    EXPECT_EQ(EventError(Event(RDMA_CM_EVENT_ESTABLISHED)), EPROTO);
}

TEST(CmEvent, RejectForMissingListenerSaysToStartTheServer) {
    EXPECT_NE(std::string(RejectReason(8)).find("listens"), std::string::npos);
    EXPECT_NE(std::string(RejectReason(1234)), "");
}

TEST(ConnParam, UsesLibrpmasRetriesAndDeviceLimits) {
    const char data[] = "hello";
    rdma_conn_param param = ConnParam(data, sizeof(data));
    EXPECT_EQ(param.private_data, data);
    EXPECT_EQ(param.private_data_len, sizeof(data));
    EXPECT_EQ(param.responder_resources, RDMA_MAX_RESP_RES);
    EXPECT_EQ(param.initiator_depth, RDMA_MAX_INIT_DEPTH);
    EXPECT_EQ(param.flow_control, 1);
    EXPECT_EQ(param.retry_count, 7);
    EXPECT_EQ(param.rnr_retry_count, 7);
    EXPECT_EQ(param.srq, 0);
    EXPECT_EQ(param.qp_num, 0u);
}

TEST(ConnParam, NoPrivateDataMeansNoPointer) {
    const char data[] = "ignored";
    rdma_conn_param param = ConnParam(data, 0);
    EXPECT_EQ(param.private_data, nullptr);
    EXPECT_EQ(param.private_data_len, 0);
}

}  // namespace
}  // namespace rpma::provider::verbs
