package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which of the parent JVM's options a bench server is started with ({@code ucx4j launch}'s workers get none). */
class ForwardedJvmOptionsTest {

    @Test
    void heapCollectorAndProcessorSettingsAreRepeatedTheRestIsNot() {
        List<String> forwarded = List.of(
                "-Xms1g",
                "-Xmx1g",
                "-XX:+AlwaysPreTouch",
                "-XX:MaxRAM=128g",
                "-XX:ActiveProcessorCount=16",
                "-XX:+UseParallelGC",
                "-XX:-UseCompressedOops");
        List<String> args = new ArrayList<>(forwarded);
        args.addAll(List.of(
                "-XX:StartFlightRecording=filename=x.jfr",
                "-agentpath:/x/libasyncProfiler.so=start",
                "-Xlog:gc:file=gc.log",
                "-Dfoo=bar",
                "--enable-native-access=org.ucx4j.core",
                "-p",
                "/jars",
                "-m",
                "org.ucx4j.cli/org.ucx4j.cli.Main",
                "bench",
                "-Xmx9g"));
        assertEquals(forwarded, PeerLauncher.forwardedJvmOptions(args));
    }

    @Test
    void scanningStopsAtTheMainClassOrJarAndSkipsOptionValues() {
        assertEquals(
                List.of("-Xmx2g"),
                PeerLauncher.forwardedJvmOptions(
                        List.of("-cp", "-Xmx5g-looks-like-an-option.jar", "-Xmx2g", "org.ucx4j.cli.Main", "-Xms3g")));
        assertEquals(
                List.of("-Xss4m"), PeerLauncher.forwardedJvmOptions(List.of("-Xss4m", "-jar", "ucx4j.jar", "-Xmx1g")));
        assertEquals(List.of(), PeerLauncher.forwardedJvmOptions(List.of()));
    }
}
