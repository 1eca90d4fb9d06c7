package org.ucx4j.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.ucx4j.testsupport.Requirements;

/**
 * The plug-in jar alone on {@code --jars} works: a Spark home made of Spark's Maven jars and nothing of
 * ucx4j, the command built by Spark's own launcher ({@code org.apache.spark.launcher.Main}, what
 * {@code spark-submit} runs), {@code --jars ucx4j-spark-<v>-all.jar --conf
 * spark.shuffle.manager=org.ucx4j.spark.UcxShuffleManager}, a {@code local-cluster} of two executor JVMs.
 * The job's bytes went through ucx4j, and neither the driver nor the executors printed Java's
 * native-access warning (Spark's launcher passes {@code --enable-native-access=ALL-UNNAMED}).
 */
@Tag("spark")
@Tag("native")
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class PluginJarIT {
    private static final String NATIVE_WARNING = "WARNING: A restricted method";

    @Test
    void pluginJarAloneOnJars(@TempDir Path dir) throws Exception {
        Requirements.assumeUcx();
        Path pluginJar = Path.of(System.getProperty("ucx4j.spark.pluginJar"));
        assertTrue(Files.isRegularFile(pluginJar), pluginJar + " (run after package)");
        Path sparkHome = sparkHome(dir.resolve("spark-home"));
        Path appJar = appJar(dir.resolve("app.jar"));

        List<String> submit = List.of(
                "org.apache.spark.deploy.SparkSubmit",
                "--master",
                "local-cluster[2,1,1024]",
                "--jars",
                pluginJar.toString(),
                "--conf",
                "spark.shuffle.manager=org.ucx4j.spark.UcxShuffleManager",
                // Test set-up, not plug-in set-up: loopback, and no host-local reads between the two executors.
                "--conf",
                "spark.driver.host=127.0.0.1",
                "--conf",
                "spark.shuffle.readHostLocalDisk=false",
                "--conf",
                "spark.ui.enabled=false",
                "--class",
                ShuffleBenchApp.class.getName(),
                appJar.toString(),
                "--size-mb",
                "2",
                "--partitions",
                "4");
        List<String> command = launcherCommand(sparkHome, submit);
        ProcessBuilder pb = new ProcessBuilder(command)
                .directory(dir.toFile())
                .redirectOutput(dir.resolve("stdout").toFile())
                .redirectError(dir.resolve("stderr").toFile());
        environment(pb, sparkHome);
        Process p = pb.start();
        boolean exited = p.waitFor(4, TimeUnit.MINUTES);
        if (!exited) {
            p.destroyForcibly();
        }
        String out = Files.readString(dir.resolve("stdout"));
        String err = Files.readString(dir.resolve("stderr"));
        assertTrue(exited, "spark-submit did not finish: " + tail(err));
        assertEquals(0, p.exitValue(), "spark-submit failed: " + tail(err));

        JsonNode result = out.lines()
                .filter(l -> l.startsWith("{"))
                .map(PluginJarIT::json)
                .findFirst()
                .orElseThrow(() -> new AssertionError("no JSON line: " + tail(out) + tail(err)));
        assertEquals(
                UcxShuffleManager.class.getName(), result.get("shuffleManager").asText());
        long remote = result.get("remoteBytesRead").asLong();
        assertTrue(remote > 0, "no remote reads: " + result);
        assertEquals(remote, result.get("bytesFetchedViaUcx4j").asLong(), result.toString());
        assertFalse(err.contains(NATIVE_WARNING), "the driver printed the native-access warning");

        List<Path> executorLogs;
        try (Stream<Path> files = Files.walk(sparkHome.resolve("work"))) {
            executorLogs = files.filter(f -> f.getFileName().toString().equals("stderr"))
                    .toList();
        }
        assertEquals(2, executorLogs.size(), executorLogs.toString());
        for (Path log : executorLogs) {
            String text = Files.readString(log);
            assertFalse(text.contains(NATIVE_WARNING), log + " has the native-access warning");
            assertTrue(text.contains("remote blocks travel over ucx://"), log + " lacks the transport line");
        }
    }

    /** A Spark home: a RELEASE file and jars/ with Spark's jars from this test's class path, none of ucx4j's. */
    private static Path sparkHome(Path home) throws IOException {
        Path jars = Files.createDirectories(home.resolve("jars"));
        Files.writeString(home.resolve("RELEASE"), "Spark 4.2.0 (Maven jars, for ucx4j's PluginJarIT)\n");
        String repo = File.separator + ".m2" + File.separator;
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path jar = Path.of(entry);
            String s = jar.toString();
            boolean testOnly = Stream.of(
                            "/org/ucx4j/",
                            "/org/junit/",
                            "/junit/",
                            "/org/awaitility/",
                            "/org/hamcrest/",
                            "/org/opentest4j/",
                            "/org/apiguardian/",
                            "/surefire/",
                            "/failsafe/",
                            "/org/snakeyaml/")
                    .anyMatch(s::contains);
            if (s.endsWith(".jar") && s.contains(repo) && !testOnly) {
                Path link = jars.resolve(jar.getFileName());
                if (!Files.exists(link)) {
                    Files.createSymbolicLink(link, jar);
                }
            }
        }
        return home;
    }

    /** The application jar: ShuffleBenchApp's classes only. */
    private static Path appJar(Path jar) throws IOException {
        Path classes = Path.of(System.getProperty("ucx4j.spark.testClasses"));
        Path pkg = classes.resolve("org/ucx4j/spark");
        try (OutputStream file = Files.newOutputStream(jar);
                JarOutputStream out = new JarOutputStream(file);
                Stream<Path> list = Files.list(pkg)) {
            for (Path c : list.filter(f -> f.getFileName().toString().startsWith("ShuffleBenchApp"))
                    .toList()) {
                out.putNextEntry(new JarEntry("org/ucx4j/spark/" + c.getFileName()));
                out.write(Files.readAllBytes(c));
                out.closeEntry();
            }
        }
        return jar;
    }

    /** What bin/spark-class does: Spark's launcher prints the command, NUL-separated. */
    private static List<String> launcherCommand(Path sparkHome, List<String> submit) throws Exception {
        List<String> launcher = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx128m",
                "-cp",
                sparkHome.resolve("jars") + File.separator + "*",
                "org.apache.spark.launcher.Main"));
        launcher.addAll(submit);
        ProcessBuilder pb = new ProcessBuilder(launcher).redirectError(ProcessBuilder.Redirect.INHERIT);
        environment(pb, sparkHome);
        Process p = pb.start();
        byte[] printed = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "Spark's launcher did not finish");
        assertEquals(0, p.exitValue(), "Spark's launcher failed");
        // The launcher starts its output with a line break: strip each argument's surrounding space.
        List<String> command = new ArrayList<>();
        for (String arg : new String(printed, StandardCharsets.UTF_8).split("\u0000")) {
            if (!arg.isBlank()) {
                command.add(arg.strip());
            }
        }
        return command;
    }

    private static void environment(ProcessBuilder pb, Path sparkHome) {
        pb.environment().remove("SPARK_TESTING");
        pb.environment().put("SPARK_HOME", sparkHome.toString());
        pb.environment().put("SPARK_SCALA_VERSION", "2.13");
        pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
    }

    private static JsonNode json(String line) {
        try {
            return new ObjectMapper().readTree(line);
        } catch (IOException e) {
            throw new AssertionError("not JSON: " + line, e);
        }
    }

    private static String tail(String s) {
        return s.length() > 4000 ? s.substring(s.length() - 4000) : s;
    }
}
