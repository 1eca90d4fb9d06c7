package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Which transports carry a tag message of each size, read from {@code ucp_ep_print_info} as UCX 1.13 and 1.22
 * print it (captured from two workers of one process, peer error handling off: shared memory; on: tcp).
 */
class EndpointDescriptionTest {
    private static String sample(String name) throws IOException {
        try (InputStream in = EndpointDescriptionTest.class.getResourceAsStream("endpoint-description/" + name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @Test
    void ucx113SharedMemoryEagerThenRendezvousOverCma() throws IOException {
        String text = sample("v113-shm.txt");
        assertEquals(List.of("sysv"), EndpointDescription.tagTransports(text, 8));
        assertEquals(List.of("sysv"), EndpointDescription.tagTransports(text, 8255));
        assertEquals(List.of("cma"), EndpointDescription.tagTransports(text, 8256), "rendezvous: the rma_bw lane");
        assertEquals(List.of("cma"), EndpointDescription.tagTransports(text, 64L << 20));
    }

    @Test
    void ucx113WithPeerErrorHandlingTcpAtEverySize() throws IOException {
        String text = sample("v113-tcp.txt");
        assertEquals(List.of("tcp"), EndpointDescription.tagTransports(text, 8));
        assertEquals(List.of("tcp"), EndpointDescription.tagTransports(text, 1L << 20), "rendezvous: am_bw lane");
    }

    @Test
    void ucx122TablesGiveEachRangeItsTransport() throws IOException {
        String text = sample("v122-shm.txt");
        assertEquals(List.of("sysv"), EndpointDescription.tagTransports(text, 0));
        assertEquals(List.of("sysv"), EndpointDescription.tagTransports(text, 5028));
        assertEquals(List.of("cma"), EndpointDescription.tagTransports(text, 5029));
        assertEquals(List.of("cma"), EndpointDescription.tagTransports(text, 256L << 20));
        String tcp = sample("v122-tcp.txt");
        assertEquals(List.of("tcp"), EndpointDescription.tagTransports(tcp, 0));
        assertEquals(List.of("tcp"), EndpointDescription.tagTransports(tcp, 16484));
        assertEquals(List.of("tcp"), EndpointDescription.tagTransports(tcp, 64L << 20));
    }

    @Test
    void aDescriptionThatSaysNothingGivesNothing() {
        assertEquals(List.of(), EndpointDescription.tagTransports("", 8));
        assertEquals(List.of(), EndpointDescription.tagTransports("# UCP endpoint\n#  peer: <no debug data>\n", 8));
        // Lanes without thresholds: which lane carries what is unknown.
        assertEquals(
                List.of(),
                EndpointDescription.tagTransports(
                        "#   lane[0]:  2:tcp/lo.0 md[1]  -> md[1]/tcp/sysdev[255] am am_bw#0\n", 8));
    }
}
