package org.ucx4j.internal.worker;

/**
 * What an {@link Operation} is: the UCX call it names in errors, and the few facts about it the
 * bookkeeping branches on.
 */
public enum OperationKind {
    TAG_SEND("ucp_tag_send_nbx"),
    TAG_SEND_IOV("ucp_tag_send_nbx (iov)"),
    STREAM_SEND("ucp_stream_send_nbx"),
    AM_SEND("ucp_am_send_nbx"),
    PUT("ucp_put_nbx"),
    /** UCX fills the whole local buffer: heap memory gets all of its staging copied back. */
    GET("ucp_get_nbx"),
    ENDPOINT_FLUSH("ucp_ep_flush_nbx"),
    /** The flush that completes a connection: its errors name {@code connect}. */
    CONNECT("connect"),
    ENDPOINT_CLOSE("ucp_ep_close_nbx"),
    WORKER_FLUSH("ucp_worker_flush_nbx"),
    TAG_RECV("ucp_tag_recv_nbx", true, false),
    TAG_RECV_IOV("ucp_tag_recv_nbx (iov)", true, false),
    STREAM_RECV("ucp_stream_recv_nbx", true, true),
    AM_RECV_DATA("ucp_am_recv_data_nbx", true, true);

    private final String call;
    private final boolean awaitsPeer;
    private final boolean lengthOnImmediateCompletion;

    OperationKind(String call) {
        this(call, false, false);
    }

    OperationKind(String call, boolean awaitsPeer, boolean lengthOnImmediateCompletion) {
        this.call = call;
        this.awaitsPeer = awaitsPeer;
        this.lengthOnImmediateCompletion = lengthOnImmediateCompletion;
    }

    /** The UCX call, as errors name it. */
    public String call() {
        return call;
    }

    /**
     * Whether it completes only when the peer sends something: a graceful close cancels it, since no
     * flush will ever complete it.
     */
    public boolean awaitsPeer() {
        return awaitsPeer;
    }

    /**
     * Whether it is a receive that may match a rendezvous message (a tag receive, an active message's
     * data): UCX then tracks it on the sender's endpoint (its {@code proto_reqs}, with peer error
     * handling) until the data comes, and only a forced close or a failure of that endpoint ends it.
     */
    public boolean mayMatchRendezvous() {
        return this == TAG_RECV || this == TAG_RECV_IOV || this == AM_RECV_DATA;
    }

    /** Whether, when UCX completes it at once, the received length is in the call's length out-parameter. */
    boolean lengthOnImmediateCompletion() {
        return lengthOnImmediateCompletion;
    }

    /** Whether it is a tag receive, whose result is the sender's tag and the length ({@code TagInfo}). */
    boolean tagReceive() {
        return this == TAG_RECV || this == TAG_RECV_IOV;
    }
}
