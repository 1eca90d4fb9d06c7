package org.ucx4j.comm;

/** The conformance suite over {@code tcp://} on IPv4 loopback. */
class TcpCommTest extends CommConformanceTest {
    @Override
    String listenAddress() {
        return "tcp://127.0.0.1:0";
    }
}
