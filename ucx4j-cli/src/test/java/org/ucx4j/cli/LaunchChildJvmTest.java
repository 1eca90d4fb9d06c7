package org.ucx4j.cli;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.ucx4j.cuda.CpuAffinity;
import org.ucx4j.testsupport.ChildJvm;
import org.ucx4j.testsupport.Requirements;
import org.ucx4j.testsupport.RunningJvm;

/**
 * {@code ucx4j launch} with CPU-only workers, end to end: the launcher and its workers are real JVMs
 * ({@link LaunchTestProgram} is the workers' program). Runs in CI, which has no GPU.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class LaunchChildJvmTest {
    private static final Duration RUN = Duration.ofSeconds(150);
    private static final Pattern READY = Pattern.compile("\\[w\\d] (?:READY \\d )?PID (\\d+)");

    @TempDir
    Path dir;

    /** {@code launch ARGS -- <this class path> LaunchTestProgram PROGRAM...}. */
    private static String[] launch(List<String> launchArgs, String... program) {
        List<String> a = new ArrayList<>(List.of("launch"));
        a.addAll(launchArgs);
        a.addAll(List.of(
                "--",
                "--enable-native-access=ALL-UNNAMED",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                System.getProperty("java.class.path"),
                LaunchTestProgram.class.getName()));
        a.addAll(List.of(program));
        return a.toArray(String[]::new);
    }

    @Test
    @Tag("native")
    void threeWorkersFindEachOtherAndExchangeMessagesOverUcxAndTcp() throws Exception {
        Requirements.assumeUcx();
        ChildJvm.Result r =
                CliProcess.run(dir, RUN, List.of(), launch(List.of("--workers", "3"), "mesh", "ucx", "tcp"));
        assertEquals(0, r.exitCode(), r.all());
        for (int rank = 0; rank < 3; rank++) {
            List<Integer> peers = new ArrayList<>(List.of(0, 1, 2));
            peers.remove(Integer.valueOf(rank));
            for (String scheme : List.of("ucx", "tcp")) {
                String line = "[w" + rank + "] EXCHANGED " + scheme + " " + rank + " " + peers;
                assertTrue(r.output().contains(line), "missing '" + line + "': " + r.all());
            }
        }
        assertTrue(r.stderr().contains("ucx4j launch: w2: rank 2, CPU only"), r.all());
    }

    @Test
    void aWorkerThatFailsStopsTheOthersAndTheExitCodeSaysWhich() throws Exception {
        ChildJvm.Result r = CliProcess.run(dir, RUN, List.of(), launch(List.of("--workers", "3"), "fail", "1", "7"));
        assertEquals(LaunchSession.EXIT_WORKER_BASE + 1, r.exitCode(), r.all());
        assertTrue(r.stderr().contains("w1 (rank 1") && r.stderr().contains("exited with 7"), r.all());
        List<Long> pids = pids(r.output(), 3);
        await("every worker gone").atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertNoneAlive(pids));
    }

    @Test
    void aCollectiveThatARankNeverJoinsFailsAfterTheCollectiveTimeoutNamingIt() throws Exception {
        ChildJvm.Result r = CliProcess.run(
                dir, RUN, List.of(), launch(List.of("--workers", "3", "--collective-timeout", "2s"), "stall", "1"));
        int code = r.exitCode();
        assertTrue(
                code == LaunchSession.EXIT_WORKER_BASE || code == LaunchSession.EXIT_WORKER_BASE + 2,
                "a waiting rank (0 or 2) failed first: " + r.all());
        assertTrue(r.all().contains("was not complete within the collective timeout (2000 ms)"), r.all());
        assertTrue(r.all().contains("waited for rank(s) 1 (2 of 3 have given their values)"), r.all());
        List<Long> pids = pids(r.output(), 3);
        await("every worker gone").atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertNoneAlive(pids));
    }

    @Test
    void sigintToTheLauncherLeavesNoProcessBehind() throws Exception {
        try (RunningJvm launcher = ChildJvm.of(Main.class)
                .workDir(dir)
                .defaultSignals("INT") // else a test run from a background job could not interrupt it
                .args(launch(List.of("--workers", "3"), "block"))
                .start()) {
            List<Long> pids = awaitPids(launcher, 3);
            Process kill = new ProcessBuilder(
                            "kill", "-INT", Long.toString(launcher.process().pid()))
                    .inheritIO()
                    .start();
            assertEquals(0, kill.waitFor());
            int code = launcher.waitFor(Duration.ofSeconds(30));
            assertEquals(130, code, "SIGINT's exit code expected; " + launcher.output());
            await("every worker gone").atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertNoneAlive(pids));
        }
    }

    @Test
    void killMinus9OfTheLauncherLeavesNoWorkerBehindWithinSeconds() throws Exception {
        try (RunningJvm launcher = ChildJvm.of(Main.class)
                .workDir(dir)
                .args(launch(List.of("--workers", "3"), "block"))
                .start()) {
            List<Long> pids = awaitPids(launcher, 3);
            launcher.kill9();
            // The watchdog looks every 250 ms and gives shutdown hooks 3 s: well within 15 s on a loaded host.
            await("every worker gone after the launcher's kill -9")
                    .atMost(Duration.ofSeconds(15))
                    .untilAsserted(() -> assertNoneAlive(pids));
        }
    }

    @Test
    void badOptionsGiveOneClearLine() throws Exception {
        record Case(List<String> args, int code, String says) {}
        List<Case> cases = List.of(
                new Case(List.of("--workers", "0", "--", "x"), Main.EXIT_USAGE, "--workers 0: expected 1..4096"),
                new Case(List.of("--workers", "2", "--cpus", "3-1", "--", "x"), Main.EXIT_USAGE, "bad CPU range '3-1'"),
                new Case(List.of("--gpus", "99", "--", "x"), Main.EXIT_USAGE, "--gpus 99"),
                new Case(List.of("--workers", "2"), Main.EXIT_USAGE, "Missing required parameter"),
                new Case(
                        List.of("--workers", "2", "--net-devices", "eth0;x", "--", "x"),
                        Main.EXIT_USAGE,
                        "is not a device name"),
                new Case(
                        List.of("--workers", "2", "--collective-timeout", "soon", "--", "x"),
                        Main.EXIT_USAGE,
                        "--collective-timeout soon: "),
                new Case(
                        List.of("--workers", "2", "--tcp", "maybe", "--", "x"),
                        Main.EXIT_CONFIG_INVALID,
                        "invalid value 'maybe' for ucx4j config key 'tcp'"));
        for (Case c : cases) {
            List<String> args = new ArrayList<>(List.of("launch"));
            args.addAll(c.args());
            ChildJvm.Result r = CliProcess.run(
                    dir, Duration.ofSeconds(60), List.of("-XX:TieredStopAtLevel=1"), args.toArray(String[]::new));
            assertEquals(c.code(), r.exitCode(), c + ": " + r.all());
            List<String> lines = r.stderr().strip().lines().toList();
            assertEquals(1, lines.size(), c + ": one line expected: " + r.all());
            assertTrue(lines.get(0).contains(c.says()), c + ": " + lines.get(0));
            assertTrue(r.output().isEmpty(), c + ": nothing on stdout: " + r.all());
        }
    }

    @Test
    void eachWorkersThreadsHaveTheComputedAffinity() throws Exception {
        BitSet allowed = CpuAffinity.allowed();
        int first = allowed.nextSetBit(0);
        int last = allowed.length() - 1;
        ChildJvm.Result r = CliProcess.run(
                dir, RUN, List.of(), launch(List.of("--workers", "2", "--cpus", first + ":" + last), "affinity"));
        assertEquals(0, r.exitCode(), r.all());
        assertTrue(r.output().contains("[w0] AFFINITY " + first + " THREADS " + first + "\n"), r.all());
        assertTrue(r.output().contains("[w1] AFFINITY " + last + " THREADS " + last + "\n"), r.all());
        assertTrue(r.stderr().contains("w0: rank 0, CPU only, CPUs " + first + " (--cpus)"), r.all());
    }

    @Test
    void anEmptyIntersectionWarnsAndUsesEveryAllowedCpu() throws Exception {
        BitSet allowed = CpuAffinity.allowed();
        Requirements.assume("CPU 8191 outside the allowed set", !allowed.get(8191), "it is allowed", null);
        String all = CpuAffinity.format(allowed);
        ChildJvm.Result r =
                CliProcess.run(dir, RUN, List.of(), launch(List.of("--workers", "1", "--cpus", "8191"), "affinity"));
        assertEquals(0, r.exitCode(), r.all());
        assertTrue(
                r.stderr()
                        .contains("warning: w0: the CPUs from --cpus (8191) and the CPUs this process may use (" + all
                                + ") have none in common: using all allowed CPUs"),
                r.all());
        assertTrue(r.output().contains("[w0] AFFINITY " + all + " THREADS " + all + "\n"), r.all());
    }

    private static List<Long> awaitPids(RunningJvm launcher, int n) {
        List<Long> pids = new ArrayList<>();
        await("every worker started").atMost(Duration.ofSeconds(90)).until(() -> {
            pids.clear();
            pids.addAll(pids(String.join("\n", launcher.output()), 0));
            return pids.size() == n;
        });
        return List.copyOf(pids);
    }

    private static List<Long> pids(String output, int expected) {
        List<Long> pids = new ArrayList<>();
        Matcher m = READY.matcher(output);
        while (m.find()) {
            pids.add(Long.parseLong(m.group(1)));
        }
        if (expected > 0) {
            assertEquals(expected, pids.size(), "workers' pids: " + output);
        }
        return pids;
    }

    private static void assertNoneAlive(List<Long> pids) {
        for (long pid : pids) {
            assertTrue(ProcessHandle.of(pid).map(h -> !h.isAlive()).orElse(true), "worker pid " + pid + " still runs");
        }
    }
}
