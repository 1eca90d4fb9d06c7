package org.ucx4j.comm;

import org.junit.jupiter.api.Test;

/** {@code tcp://} over IPv6 loopback: addressing only (the rest is the same code as IPv4). */
class TcpIpv6CommTest {
    @Test
    void pingPongOverIpv6() throws Exception {
        CommConformanceTest suite = new TcpCommTest() {
            @Override
            String listenAddress() {
                return "tcp://[::1]:0";
            }
        };
        try {
            suite.pingPongBothWaysThenClose();
            suite.closeAll();
            suite.addressesAreRightOnBothSides();
        } finally {
            suite.closeAll();
        }
    }
}
