package org.ucx4j.comm.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.ucx4j.ProgressMode;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxKeys;
import org.ucx4j.WorkerOptions;

/** The comms' UCX worker takes its options from the comm context's configuration. */
class CommWorkerOptionsTest {
    @Test
    void theConfigsProgressSettingsReachTheCommsWorker() {
        WorkerOptions o = UcxRuntime.workerOptions(
                UcxConfig.builder()
                        .set(UcxKeys.PROGRESS_MODE, ProgressMode.THREAD_POLLING)
                        .set(UcxKeys.PROGRESS_SPIN, Duration.ZERO)
                        .set(UcxKeys.CONNECT_TIMEOUT, Duration.ofMillis(700))
                        .set(UcxKeys.PEER_ERROR_HANDLING, false)
                        .build(),
                "w");
        assertEquals(ProgressMode.THREAD_POLLING, o.progressMode());
        assertEquals(Duration.ZERO, o.spin());
        assertEquals(Duration.ofMillis(700), o.connectTimeout());
        assertEquals(false, o.peerErrorHandling());
        assertEquals("w", o.name());
        assertEquals(
                WorkerOptions.DEFAULT_SPIN,
                UcxRuntime.workerOptions(UcxConfig.builder().build(), "w").spin());
    }
}
