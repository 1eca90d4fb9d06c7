package org.ucx4j.comm;

/** The conformance suite over {@code inproc://}. */
class InprocCommTest extends CommConformanceTest {
    @Override
    String listenAddress() {
        return "inproc://0";
    }

    @Override
    boolean crossesProcesses() {
        return false;
    }
}
