package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.ucx4j.Ucx;
import org.ucx4j.testsupport.ChildJvm;
import org.ucx4j.testsupport.Requirements;

/**
 * {@code ucx4j demo --quick} end to end in a child JVM (with a bench server JVM per transport): the table
 * has a row per size with figures for both transports, and the page has both charts and the table.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
@Tag("native")
class DemoChildJvmTest {
    @TempDir
    Path dir;

    @Test
    void quickDemoPrintsTheTableAndWritesThePage() throws Exception {
        Requirements.assumeUcx();
        Path html = dir.resolve("out/demo.html");
        ChildJvm.Result r =
                CliProcess.run(dir, Duration.ofSeconds(150), List.of(), "demo", "--quick", "--html", html.toString());
        assertEquals(0, r.exitCode(), r.all());
        for (String size : List.of("4 KiB", "1 MiB", "16 MiB")) {
            // | size | ucx MB/s | tcp MB/s | ratio | ucx rt/s | tcp rt/s | ratio |: every cell a number.
            Matcher row = Pattern.compile("\\|\\s+" + Pattern.quote(size) + "\\s+\\|([^\\n]*)")
                    .matcher(r.output());
            assertTrue(row.find(), "no row for " + size + ": " + r.all());
            String[] cells = row.group(1).split("\\|");
            assertEquals(7, cells.length, row.group());
            for (int i = 0; i < 6; i++) {
                double v = Double.parseDouble(cells[i].trim().replace(",", "").replace("x", ""));
                assertTrue(v > 0, "cell " + i + " of " + row.group());
            }
            // ucx:// via: UCX's transports for that size, each one the context uses (UCX 1.13 and 1.22 both say).
            String via = cells[6].trim();
            assertTrue(via.matches("[a-z0-9_]+(, [a-z0-9_]+)*"), "transports of " + size + ": " + row.group());
            Matcher used = Pattern.compile("UCX transports ([^;]*);").matcher(r.output());
            assertTrue(used.find(), r.output());
            for (String tl : via.split(", ")) {
                assertTrue(List.of(used.group(1).split(", ")).contains(tl), tl + " not among " + used.group(1));
            }
        }
        assertTrue(r.stderr().contains("ucx://") && r.stderr().contains("tcp://"), "no progress lines: " + r.all());

        String page = Files.readString(html);
        assertEquals(2, page.split("<svg", -1).length - 1, "two charts expected");
        assertTrue(page.contains("<polyline"), "no lines in the charts");
        assertTrue(page.contains("ucx://") && page.contains("tcp://"), "both transports' series expected");
        assertTrue(page.contains("<td>16 MiB</td>"), "the table's rows expected");
        assertFalse(page.contains("<script") || page.contains("src=") || page.contains("<link"), "self-contained");
        assertTrue(page.contains("<th>ucx version</th><td>" + Ucx.version() + "</td>"), "UCX version expected");
    }
}
