package org.ucx4j.comm.internal;

import java.net.URI;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.ucx4j.CloseMode;
import org.ucx4j.UcxContext;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxWorker;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.testsupport.Requirements;

/** {@link HostileInputTest} over {@code ucx://}: a raw UCX endpoint of the test's own. */
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
    Raw raw(URI l) {
        UcxContext ctx = UcxContext.create();
        UcxWorker worker = ctx.newWorker();
        UcxEndpoint ep = worker.connect("127.0.0.1", l.getPort());
        long myTag = UcxRuntime.TAG_PREFIX | 1; // this test's own worker: any comm tag will do
        return new Raw() {
            long peerTag;

            @Override
            public void sendHandshakeBytes(byte[] bytes) {
                ep.streamSend(bytes);
            }

            @Override
            public void handshake(CommOptions o) throws Exception {
                peerTag = Handshake.client(new UcxStreamChannel(ep), o, myTag, l.toString(), null)
                        .peerTag();
            }

            @Override
            public void sendHeader(byte[] bytes) {
                ep.tagSend(bytes, peerTag);
            }

            @Override
            public byte[] receiveRecord() throws Exception {
                return new UcxStreamChannel(ep).receive();
            }

            @Override
            public void close() {
                try {
                    ep.closeAsync(CloseMode.FORCE);
                } finally {
                    worker.close();
                    ctx.close();
                }
            }
        };
    }
}
