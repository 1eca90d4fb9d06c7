package org.ucx4j.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * {@code --net-devices auto}: the network interface nearest a GPU by PCI topology, read from sysfs.
 *
 * <p>Candidates are the interfaces of {@code /sys/class/net} that sit on a PCI device (virtual ones, such as
 * {@code lo}, bridges and veths, have none) and whose {@code operstate} is {@code up}: an interface that is
 * down is never chosen. Distance is the number of PCI bridges between the two devices (up from one to their
 * common ancestor and down to the other, from their real paths under {@code /sys/devices}); ties go to the
 * name that sorts first.
 *
 * <p>InfiniBand is never switched on silently: when the nearest interface belongs to an RDMA device
 * ({@code device/infiniband/<name>}), the choice is its RDMA port ({@code mlx5_0:1}) only when the
 * configuration's {@code infiniband} is true; otherwise the interface's name (so UCX uses it for TCP only)
 * and a note saying how to use the RDMA device.
 *
 * <p>Threading: stateless.
 */
final class NearestNetDevice {
    /**
     * What {@code auto} chose for one GPU.
     *
     * @param device the value for {@code net-devices}
     * @param reason one line: the interface, its distance, and any RDMA device left out
     */
    record Choice(String device, String reason) {}

    private NearestNetDevice() {}

    /**
     * Chooses the interface nearest a GPU.
     *
     * @param sysfs the sysfs root ({@code /sys})
     * @param gpuPciBusId the GPU's PCI bus id, {@code 0000:18:00.0}
     * @param infiniband whether the configuration enables InfiniBand
     * @return the choice, or empty when no up interface with a PCI device exists (the caller lets UCX decide)
     */
    static Optional<Choice> choose(Path sysfs, String gpuPciBusId, boolean infiniband) {
        Path gpu = sysfs.resolve("bus/pci/devices").resolve(gpuPciBusId.toLowerCase(Locale.ROOT));
        List<String> gpuPath;
        try {
            gpuPath = pciPath(gpu.toRealPath());
        } catch (IOException e) {
            return Optional.empty();
        }
        record Candidate(String name, Path device, int distance) {}
        List<Candidate> candidates = new ArrayList<>();
        try (Stream<Path> interfaces = Files.list(sysfs.resolve("class/net"))) {
            for (Path iface : interfaces.sorted().toList()) {
                Path device = iface.resolve("device");
                if (!Files.exists(device) || !"up".equals(read(iface.resolve("operstate")))) {
                    continue;
                }
                Path real = device.toRealPath();
                candidates.add(new Candidate(iface.getFileName().toString(), real, distance(gpuPath, pciPath(real))));
            }
        } catch (IOException e) {
            return Optional.empty();
        }
        Optional<Candidate> best = candidates.stream()
                .min(Comparator.comparingInt(Candidate::distance).thenComparing(Candidate::name));
        if (best.isEmpty()) {
            return Optional.empty();
        }
        Candidate c = best.get();
        String where = c.name() + ": the up interface nearest GPU " + gpuPciBusId + " (" + c.distance() + " PCI hops)";
        Optional<String> rdma = rdmaDevice(c.device());
        if (rdma.isEmpty()) {
            return Optional.of(new Choice(c.name(), where));
        }
        String port = rdma.get() + ":1";
        if (infiniband) {
            return Optional.of(new Choice(port, where + ", RDMA device " + port + " (infiniband is true)"));
        }
        return Optional.of(new Choice(
                c.name(),
                where + "; its RDMA device " + rdma.get() + " is left out (TCP only): set --infiniband true to use "
                        + port));
    }

    private static Optional<String> rdmaDevice(Path pciDevice) {
        Path ib = pciDevice.resolve("infiniband");
        if (!Files.isDirectory(ib)) {
            return Optional.empty();
        }
        try (Stream<Path> s = Files.list(ib)) {
            return s.map(p -> p.getFileName().toString()).sorted().findFirst();
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /** The PCI devices from the root complex down, from a real path under {@code /sys/devices}. */
    private static List<String> pciPath(Path real) {
        List<String> parts = new ArrayList<>();
        for (Path p : real) {
            String s = p.toString();
            if (s.startsWith("pci") || s.matches("\\p{XDigit}{4}:\\p{XDigit}{2}:\\p{XDigit}{2}\\.\\p{XDigit}")) {
                parts.add(s);
            }
        }
        return parts;
    }

    private static int distance(List<String> a, List<String> b) {
        int common = 0;
        while (common < a.size() && common < b.size() && a.get(common).equals(b.get(common))) {
            common++;
        }
        return (a.size() - common) + (b.size() - common);
    }

    private static String read(Path p) {
        try {
            return Files.readString(p).strip();
        } catch (IOException e) {
            return "";
        }
    }
}
