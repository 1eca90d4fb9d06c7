package org.ucx4j.comm.internal;

/** {@link HostileInputTest} over {@code tcp://}. */
class TcpHostileInputTest extends HostileInputTest {
    private final Tcp tcp = new Tcp();

    @Override
    String listenAddress() {
        return tcp.listenAddress();
    }

    @Override
    Raw raw(java.net.URI l) throws Exception {
        return tcp.raw(l);
    }
}
