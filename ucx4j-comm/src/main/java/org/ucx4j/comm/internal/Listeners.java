package org.ucx4j.comm.internal;

import java.net.URI;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommHandler;

/** Runs a listener's handler for one accepted comm, on the calling (virtual) thread. */
final class Listeners {
    private static final Logger LOG = LoggerFactory.getLogger(Listeners.class);

    private Listeners() {}

    /** A listener's {@code toString()}: its address and whether it is closed. */
    static String describe(URI listener, boolean closed) {
        return "CommListener[" + listener + (closed ? ", closed" : "") + "]";
    }

    static void runHandler(CommHandler handler, Comm comm, URI listener) {
        try {
            handler.onComm(comm);
        } catch (Throwable t) {
            LOG.error("{}: the comm handler failed for {}; aborting that comm", listener, comm, t);
            comm.abort();
        }
    }
}
