package org.ucx4j.cluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The order in which the rendezvous tells one worker things: the values of every round that completed
 * before another rank left come first, then the failure, then the end of the stream. (A rank that left
 * right after the last round once overtook that round's values to the others, ClusterTest saw it once;
 * here the interleaving is forced: the failure is reported before the round is written.)
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class RendezvousMemberTest {
    private static final byte[][] ROUND = {"a".getBytes(StandardCharsets.UTF_8), "bc".getBytes(StandardCharsets.UTF_8)};

    private ServerSocket listener;
    private Socket serverSide;
    private Socket workerSide;
    private RendezvousServer.Member member;
    private DataInputStream worker;

    @BeforeEach
    void connect() throws IOException {
        listener = new ServerSocket();
        listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        workerSide = new Socket(InetAddress.getLoopbackAddress(), listener.getLocalPort());
        serverSide = listener.accept();
        workerSide.setSoTimeout(10_000);
        member = new RendezvousServer.Member(
                1,
                serverSide,
                new DataOutputStream(new BufferedOutputStream(serverSide.getOutputStream())),
                RendezvousServer.WRITE_TIMEOUT_MILLIS);
        worker = new DataInputStream(new BufferedInputStream(workerSide.getInputStream()));
    }

    @AfterEach
    void close() throws IOException {
        workerSide.close();
        serverSide.close();
        listener.close();
    }

    @Test
    void aFailureReportedBeforeTheLastRoundIsWrittenWaitsForIt() throws IOException {
        member.failAfter("rank 0 closed its connection", 1); // rank 0 left; round 1's values not yet here
        member.sendRound(ROUND); // the thread that completed the round gets to this worker only now
        expectRound();
        expectFailure("rank 0 closed its connection");
    }

    @Test
    void aFailureAfterItsRoundsGoesAtOnce() throws IOException {
        member.sendRound(ROUND);
        member.failAfter("rank 2 lost its connection", 1);
        expectRound();
        expectFailure("rank 2 lost its connection");
    }

    @Test
    void aFailureBeforeAnyRoundGoesAtOnce() throws IOException {
        member.failAfter("rank 0 closed its connection", 0);
        expectFailure("rank 0 closed its connection");
    }

    private void expectRound() throws IOException {
        assertEquals(RendezvousWire.OK, worker.readInt(), "a round's values first");
        assertEquals(ROUND.length, worker.readInt());
        for (byte[] v : ROUND) {
            assertArrayEquals(v, RendezvousWire.readBytes(worker, worker.readInt()));
        }
    }

    private void expectFailure(String message) throws IOException {
        assertEquals(RendezvousWire.ERROR, worker.readInt(), "then the failure");
        assertEquals(message, worker.readUTF());
        assertEquals(-1, worker.read(), "then the end of the stream: nothing more is said");
    }
}
