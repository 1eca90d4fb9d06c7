package org.ucx4j.cli;

import java.util.Locale;

/** The ucx4j-comm transports {@code ucx4j bench --comm} and {@code ucx4j demo} measure. */
enum CommKind {
    /** {@code ucx://host:port}: UCX tag messages (needs UCX). */
    UCX,
    /** {@code tcp://host:port}: one TCP connection, plain JDK sockets. */
    TCP,
    /** {@code inproc://name}: both ends in one JVM. */
    INPROC;

    /** The URI scheme, also the label in output. */
    String scheme() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Whether this transport needs the UCX library. */
    boolean needsUcx() {
        return this == UCX;
    }

    /** Whether the server runs in a process of its own (else in this JVM). */
    boolean twoProcesses() {
        return this != INPROC;
    }
}
