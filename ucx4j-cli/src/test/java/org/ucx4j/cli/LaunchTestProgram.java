package org.ucx4j.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Stream;
import org.ucx4j.cluster.Cluster;
import org.ucx4j.cluster.ClusterMesh;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.Message;
import org.ucx4j.cuda.CpuAffinity;
import org.ucx4j.cuda.Cuda;
import org.ucx4j.cuda.CudaDevice;

/**
 * The program the launcher tests run as each worker ({@code ucx4j launch ... -- -cp <tests> LaunchTestProgram
 * MODE}). Modes:
 *
 * <ul>
 *   <li>{@code mesh SCHEME...}: join the cluster, connect all-to-all over each scheme, send every peer a
 *       message naming this rank, check every peer's, print {@code EXCHANGED <scheme> <rank> <peers>};
 *   <li>{@code fail RANK CODE}: join, print {@code READY}; rank RANK exits with CODE once every worker is
 *       ready, the others wait forever;
 *   <li>{@code block}: print {@code PID <pid>}, wait forever;
 *   <li>{@code affinity}: print {@code AFFINITY <sched_getaffinity> THREADS <each thread's Cpus_allowed_list>};
 *   <li>{@code gpu}: print {@code GPU <cluster's GPU> <CUDA device 0's UUID> <NVML CPUs> <allowed CPUs>}.
 * </ul>
 */
public final class LaunchTestProgram {
    private LaunchTestProgram() {}

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "mesh" -> mesh(List.of(args).subList(1, args.length));
            case "fail" -> fail(Integer.parseInt(args[1]), Integer.parseInt(args[2]));
            case "stall" -> stall(Integer.parseInt(args[1]));
            case "block" -> {
                System.out.println("PID " + ProcessHandle.current().pid());
                waitForever();
            }
            case "affinity" -> affinity();
            case "gpu" -> gpu();
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    private static void mesh(List<String> schemes) {
        try (Cluster cluster = Cluster.join()) {
            for (String scheme : schemes) {
                try (ClusterMesh mesh = cluster.mesh(scheme + "://127.0.0.1:0", CommOptions.defaults())) {
                    for (int peer : mesh.peers()) {
                        mesh.comm(peer)
                                .write(Message.ofBytes(("from " + cluster.rank()).getBytes(StandardCharsets.UTF_8)));
                    }
                    for (int peer : mesh.peers()) {
                        try (Message m = mesh.comm(peer).read(Duration.ofSeconds(60))) {
                            String text = new String(m.frame(0).toByteArray(), StandardCharsets.UTF_8);
                            if (!text.equals("from " + peer)) {
                                throw new IllegalStateException("rank " + peer + "'s comm carried '" + text + "'");
                            }
                        }
                    }
                    System.out.println("EXCHANGED " + scheme + " " + cluster.rank() + " " + mesh.peers());
                    cluster.barrier(); // nobody closes its comms before every peer has read
                }
            }
        }
    }

    private static void fail(int failing, int code) throws InterruptedException {
        Cluster cluster = Cluster.join();
        System.out.println(
                "READY " + cluster.rank() + " PID " + ProcessHandle.current().pid());
        cluster.barrier();
        if (cluster.rank() == failing) {
            System.exit(code);
        }
        waitForever();
    }

    /** Rank {@code stuck} never joins the barrier the others wait in. */
    private static void stall(int stuck) throws InterruptedException {
        Cluster cluster = Cluster.join();
        System.out.println(
                "READY " + cluster.rank() + " PID " + ProcessHandle.current().pid());
        if (cluster.rank() == stuck) {
            waitForever();
        }
        cluster.barrier(); // fails once the launcher's collective timeout passes: the worker exits with 1
    }

    private static void affinity() throws IOException {
        Thread extra = Thread.ofPlatform().start(LaunchTestProgram::waitForeverQuietly);
        TreeSet<String> lists = new TreeSet<>();
        try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path t : tasks.toList()) {
                try {
                    Files.readAllLines(t.resolve("status")).stream()
                            .filter(l -> l.startsWith("Cpus_allowed_list:"))
                            .forEach(l ->
                                    lists.add(l.substring(l.indexOf(':') + 1).trim()));
                } catch (IOException gone) {
                    // the thread ended meanwhile
                }
            }
        }
        System.out.println(
                "AFFINITY " + CpuAffinity.format(CpuAffinity.allowed()) + " THREADS " + String.join(";", lists));
        extra.interrupt();
    }

    private static void gpu() {
        try (Cluster cluster = Cluster.join()) {
            CudaDevice d = Cuda.device(0);
            List<String> out = new ArrayList<>();
            out.add(cluster.gpu().orElse("-"));
            out.add("GPU-" + d.uuid());
            out.add(d.topology().cpuList());
            out.add(CpuAffinity.format(CpuAffinity.allowed()));
            System.out.println("GPU " + cluster.name() + " " + String.join(" ", out));
            cluster.barrier();
        }
    }

    private static void waitForeverQuietly() {
        try {
            waitForever();
        } catch (InterruptedException ignored) {
            // done
        }
    }

    private static void waitForever() throws InterruptedException {
        new CountDownLatch(1).await(); // a worker that only waits to be stopped
    }
}
