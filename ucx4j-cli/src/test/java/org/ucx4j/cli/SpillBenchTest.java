package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.cuda.Cuda;
import org.ucx4j.testsupport.Requirements;

/** {@code ucx4j bench --spill}: refused with other modes, one line without a GPU, both figures with one. */
@Timeout(120)
class SpillBenchTest {
    @Test
    void spillRunsAloneAndSaysWhyWithoutAGpu() {
        assertEquals(Main.EXIT_USAGE, Main.run("bench", "--spill", "--comm", "tcp"));
        assertEquals(Main.EXIT_USAGE, Main.run("bench", "--spill", "--op", "tag"));
        assertEquals(Main.EXIT_USAGE, Main.run("bench", "--spill", "--iters", "0"), "no median of no rounds");
        if (!Cuda.isAvailable()) {
            assertEquals(Main.EXIT_UCX_UNAVAILABLE, Main.run("bench", "--spill", "--size", "1Mi"));
        }
    }

    @Test
    @Tag("gpu")
    void spillReportsBothBandwidthsAndTheirRatio() throws Exception {
        Requirements.assume(
                "a CUDA GPU",
                Cuda.isAvailable(),
                Cuda.unavailabilityReason().orElse("no GPU"),
                Requirements.REQUIRE_GPU);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        assertEquals(0, SpillBench.run(0, 64L << 20, 3, true, new PrintStream(out, true, StandardCharsets.UTF_8)));
        JsonNode json = new ObjectMapper().readTree(out.toString(StandardCharsets.UTF_8));
        double copy = json.get("cumemcpy_pinned_mb_s").asDouble();
        double spill = json.get("spill_mb_s").asDouble();
        assertEquals(spill / copy, json.get("ratio").asDouble(), 1e-9);
        assertEquals(3, json.get("spill_rounds_mb_s").size());
        assertEquals(64L << 20, json.get("size").asLong());
    }
}
