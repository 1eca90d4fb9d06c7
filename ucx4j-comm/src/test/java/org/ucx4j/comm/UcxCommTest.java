package org.ucx4j.comm;

import org.junit.jupiter.api.BeforeEach;

/** The conformance suite over {@code ucx://} (UCX's socket-address connection set-up). */
class UcxCommTest extends CommConformanceTest {
    @BeforeEach
    void needsUcx() {
        NativeUcx.require();
    }

    @Override
    String listenAddress() {
        return "ucx://127.0.0.1:0";
    }
}
