package org.ucx4j.comm.internal;

import java.net.URI;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.testsupport.Requirements;

/** {@link HostileInputTest} over {@code ucx://}: a raw socket and a UCX endpoint of the test's own. */
@Tag("native")
class UcxHostileInputTest extends HostileInputTest {
    @BeforeAll
    static void needsUcx() {
        Requirements.assumeUcx();
    }

    @Override
    String listenAddress() {
        return "ucx://127.0.0.1:0";
    }

    @Override
    Raw raw(URI l) throws Exception {
        RawUcxClient c = new RawUcxClient(l);
        return new Raw() {
            @Override
            public void sendHandshakeBytes(byte[] bytes) throws Exception {
                c.sendBytes(bytes);
            }

            @Override
            public void handshake(CommOptions o) throws Exception {
                c.handshake(o, l.toString());
            }

            @Override
            public void sendHeader(byte[] bytes) {
                c.sendToComm(bytes);
            }

            @Override
            public byte[] receiveRecord() throws Exception {
                return c.receiveRecord();
            }

            @Override
            public void close() throws Exception {
                c.close();
            }
        };
    }
}
