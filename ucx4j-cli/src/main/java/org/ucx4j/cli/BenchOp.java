package org.ucx4j.cli;

import java.util.Locale;
import org.ucx4j.Feature;

/**
 * The operation {@code ucx4j bench} measures, with the UCX feature it needs and the {@code ucx_perftest}
 * test it compares with.
 *
 * <p>Message operations (tag, stream, am) are two-sided: the server posts receives. One-sided operations
 * (put, get) touch a memory region the server mapped and whose remote key it sent at set-up; the server
 * only progresses its worker.
 */
enum BenchOp {
    /** Tag-matched messages ({@code ucp_tag_send_nbx} / {@code ucp_tag_recv_nbx}). */
    TAG(Feature.TAG, "tag_lat", "tag_bw"),
    /** The endpoint's byte stream ({@code ucp_stream_send_nbx} / {@code ucp_stream_recv_nbx}, wait-all). */
    STREAM(Feature.STREAM, "stream_lat", "stream_bw"),
    /** Active messages ({@code ucp_am_send_nbx}, a handler per id, bodies into allocator memory). */
    AM(Feature.AM, "ucp_am_lat", "ucp_am_bw"),
    /** RMA put into the server's region ({@code ucp_put_nbx}); latency is a put plus an endpoint flush. */
    PUT(Feature.RMA, "ucp_put_lat", "ucp_put_bw"),
    /** RMA get from the server's region ({@code ucp_get_nbx}); latency is one get. */
    GET(Feature.RMA, "ucp_get", "ucp_get");

    private final Feature feature;
    private final String perftestLatency;
    private final String perftestBandwidth;

    BenchOp(Feature feature, String perftestLatency, String perftestBandwidth) {
        this.feature = feature;
        this.perftestLatency = perftestLatency;
        this.perftestBandwidth = perftestBandwidth;
    }

    /** The UCX feature the data path needs (control messages always use tags as well). */
    Feature feature() {
        return feature;
    }

    /** Whether the server posts nothing: put and get. */
    boolean oneSided() {
        return this == PUT || this == GET;
    }

    /** The {@code ucx_perftest -t} test that measures the same thing in {@code mode}. */
    String perftestName(BenchMode mode) {
        return mode == BenchMode.LATENCY ? perftestLatency : perftestBandwidth;
    }

    /** Lower-case name, as {@code --op} takes it. */
    String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
