/**
 * ucx4j-comm: URI-addressed transports carrying framed messages, the JVM's counterpart of
 * distributed-ucxx. The API is {@code org.ucx4j.comm}; {@code org.ucx4j.comm.spi} is for third parties
 * adding a transport; {@code org.ucx4j.cluster} is the worker's side of {@code ucx4j launch} (rank, size,
 * rendezvous, all-to-all comms); the built-in transports ({@code ucx://}, {@code ucxx://}, {@code ucx-worker://},
 * {@code tcp://}, {@code inproc://}) live in {@code org.ucx4j.comm.internal}.
 */
module org.ucx4j.comm {
    requires transitive org.ucx4j.core;
    requires org.slf4j;

    exports org.ucx4j.comm;
    exports org.ucx4j.comm.spi;
    exports org.ucx4j.cluster;

    uses org.ucx4j.comm.spi.Transport;

    provides org.ucx4j.spi.ConfigKeySet with
            org.ucx4j.comm.internal.CommKeySet;
    provides org.ucx4j.comm.spi.Transport with
            org.ucx4j.comm.internal.UcxTransport,
            org.ucx4j.comm.internal.TcpTransport,
            org.ucx4j.comm.internal.InprocTransport;
}
