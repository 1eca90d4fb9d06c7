package org.ucx4j.cli;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxConfigException;
import org.ucx4j.UcxKeys;
import org.ucx4j.cluster.Cluster;
import org.ucx4j.cuda.CpuAffinity;

/**
 * Turns {@link LaunchOptions} and a {@link Machine} into one {@link WorkerPlan} per worker, starting nothing:
 * shared by {@code ucx4j launch} and {@code ucx4j cuda config}, and testable with a made-up machine.
 *
 * <p>Which workers: one per chosen GPU ({@code --gpus}, default all; {@code --workers-per-gpu} each), or
 * {@code --workers N} CPU-only workers, or one CPU-only worker on a machine without a GPU. Each GPU worker's
 * {@code CUDA_VISIBLE_DEVICES} lists every GPU of the machine by UUID, its own first (the others stay
 * visible for CUDA IPC), with {@code CUDA_DEVICE_ORDER=PCI_BUS_ID}.
 *
 * <p>CPUs: {@code --cpus} or, for a GPU worker, NVML's CPUs of its GPU, intersected with the CPUs this
 * process may use; when NVML cannot say or the intersection is empty, a warning and all allowed CPUs.
 * Network device: {@code --net-devices} (one, one per worker or per GPU, or {@code auto}:
 * {@link NearestNetDevice}); by default UCX decides.
 *
 * <p>Threading: stateless.
 */
final class LaunchPlanner {
    /** The most workers one launch starts. */
    static final int MAX_WORKERS = 4096;

    private LaunchPlanner() {}

    /**
     * A plan and the configuration it was checked against.
     *
     * @param workers the workers, in rank order
     * @param config the ucx4j configuration the workers will resolve (this process's sources and the options)
     */
    record Planned(List<WorkerPlan> workers, UcxConfig config) {}

    /**
     * Checks the configuration options (every worker gets them as {@code UCX4J__*} variables) and plans.
     *
     * @param options what was asked
     * @param machine what there is
     * @return the plan
     * @throws UcxConfigException naming the key, value and source of a bad configuration value
     * @throws IllegalArgumentException with one line for the user when the options cannot be satisfied
     */
    static Planned plan(LaunchOptions options, Machine machine) {
        UcxConfig.Builder b = UcxConfig.builder();
        options.configValues().forEach(b::set);
        UcxConfig config = b.build();
        boolean infiniband = config.find(UcxKeys.INFINIBAND).orElse(false);
        return new Planned(plan(options, machine, infiniband), config);
    }

    /**
     * Plans a launch.
     *
     * @param options what was asked
     * @param machine what there is
     * @param infiniband whether the configuration enables InfiniBand (for {@code --net-devices auto})
     * @return the workers, in rank order
     * @throws IllegalArgumentException with one line for the user when the options cannot be satisfied
     */
    static List<WorkerPlan> plan(LaunchOptions options, Machine machine, boolean infiniband) {
        List<Optional<Machine.Gpu>> slots = slots(options, machine);
        int n = slots.size();
        List<BitSet> givenCpus = givenCpus(options.cpus, n);
        List<String> devices = netDevices(options.netDevices, slots);
        if (options.config.keySet().stream().anyMatch(k -> normalize(k).equals("net-devices"))
                && options.netDevices != null) {
            throw new IllegalArgumentException("net-devices is given twice: by --net-devices and by --config");
        }
        Map<Integer, Integer> perGpu = new LinkedHashMap<>();
        slots.forEach(s -> s.ifPresent(g -> perGpu.merge(g.index(), 1, Integer::sum)));
        Map<Integer, Integer> seen = new LinkedHashMap<>();
        List<WorkerPlan> plans = new ArrayList<>();
        for (int rank = 0; rank < n; rank++) {
            Optional<Machine.Gpu> gpu = slots.get(rank);
            List<String> warnings = new ArrayList<>();
            String name;
            List<String> visible = List.of();
            Map<String, String> env = new LinkedHashMap<>();
            if (gpu.isPresent()) {
                Machine.Gpu g = gpu.get();
                int k = seen.merge(g.index(), 1, Integer::sum) - 1;
                name = "gpu" + g.index() + (perGpu.get(g.index()) > 1 ? "." + k : "");
                visible = rotated(machine.gpus(), g.index());
                env.put("CUDA_VISIBLE_DEVICES", String.join(",", visible));
                env.put("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
            } else {
                name = "w" + rank;
            }
            BitSet wanted = givenCpus != null
                    ? givenCpus.get(rank)
                    : gpu.map(Machine.Gpu::nvmlCpus).orElse(null);
            String source = givenCpus != null ? "--cpus" : gpu.isPresent() ? "NVML" : null;
            BitSet cpus;
            String cpuSource;
            if (wanted == null) {
                cpus = (BitSet) machine.allowedCpus().clone();
                cpuSource = "all allowed (a CPU-only worker)";
            } else if (wanted.isEmpty()) {
                cpus = (BitSet) machine.allowedCpus().clone();
                cpuSource = "all allowed";
                warnings.add("NVML cannot say which CPUs are near " + gpu.get().uuid() + " ("
                        + gpu.get().nvmlProblem().orElse("no CPUs reported") + "): using all allowed CPUs "
                        + CpuAffinity.format(cpus));
            } else {
                BitSet both = (BitSet) wanted.clone();
                both.and(machine.allowedCpus());
                if (both.isEmpty()) {
                    cpus = (BitSet) machine.allowedCpus().clone();
                    cpuSource = "all allowed";
                    warnings.add("the CPUs from " + source + " (" + CpuAffinity.format(wanted)
                            + ") and the CPUs this process may use (" + CpuAffinity.format(cpus)
                            + ") have none in common: using all allowed CPUs");
                } else {
                    cpus = both;
                    cpuSource = both.equals(wanted) ? source : source + " within the allowed CPUs";
                }
            }
            Optional<String> device = Optional.empty();
            String netSource = "UCX decides";
            if (devices != null) {
                device = Optional.of(devices.get(rank));
                netSource = "--net-devices";
            } else if ("auto".equalsIgnoreCase(options.netDevices)) {
                if (gpu.isEmpty()) {
                    netSource = "auto: a CPU-only worker has no GPU to be near; UCX decides";
                } else {
                    Optional<NearestNetDevice.Choice> c =
                            NearestNetDevice.choose(machine.sysfs(), gpu.get().pciBusId(), infiniband);
                    if (c.isPresent()) {
                        device = Optional.of(c.get().device());
                        netSource = "auto: " + c.get().reason();
                    } else {
                        netSource = "auto: no up network interface on PCI; UCX decides";
                        warnings.add("--net-devices auto found no up network interface on PCI near "
                                + gpu.get().pciBusId() + ": UCX decides");
                    }
                }
            }
            options.configValues().forEach((k, v) -> env.put(environmentName(k), v));
            device.ifPresent(d -> env.put(environmentName("net-devices"), d));
            env.put(Cluster.ENV_RANK, Integer.toString(rank));
            env.put(Cluster.ENV_SIZE, Integer.toString(n));
            env.put(Cluster.ENV_NAME, name);
            gpu.ifPresent(g -> env.put(Cluster.ENV_GPU, g.uuid()));
            plans.add(new WorkerPlan(
                    rank,
                    name,
                    gpu,
                    visible,
                    cpus,
                    cpuSource,
                    device,
                    netSource,
                    List.copyOf(warnings),
                    Map.copyOf(env)));
        }
        return List.copyOf(plans);
    }

    /**
     * The environment variable that carries a configuration key ({@code memory-pool.size} to
     * {@code UCX4J__MEMORY_POOL__SIZE}), as docs/CONFIGURATION.md spells it.
     *
     * @param key the key
     * @return the variable's name
     */
    static String environmentName(String key) {
        return "UCX4J__" + normalize(key).replace(".", "__").replace('-', '_').toUpperCase(Locale.ROOT);
    }

    private static String normalize(String key) {
        return key.trim().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    private static List<Optional<Machine.Gpu>> slots(LaunchOptions o, Machine machine) {
        if (o.workers != null) {
            if (o.gpus != null || o.workersPerGpu != null) {
                throw new IllegalArgumentException("--workers starts CPU-only workers: give it without --gpus and "
                        + "--workers-per-gpu (two workers on one GPU: --gpus 0 --workers-per-gpu 2, or --gpus 0,0)");
            }
            if (o.workers < 1 || o.workers > MAX_WORKERS) {
                throw new IllegalArgumentException("--workers " + o.workers + ": expected 1.." + MAX_WORKERS);
            }
            List<Optional<Machine.Gpu>> cpuOnly = new ArrayList<>();
            for (int i = 0; i < o.workers; i++) {
                cpuOnly.add(Optional.empty());
            }
            return cpuOnly;
        }
        int each = o.workersPerGpu == null ? 1 : o.workersPerGpu;
        if (each < 1 || each > 64) {
            throw new IllegalArgumentException("--workers-per-gpu " + each + ": expected 1..64");
        }
        if (machine.gpus().isEmpty()) {
            if (o.gpus != null || o.workersPerGpu != null) {
                throw new IllegalArgumentException((o.gpus != null ? "--gpus " + o.gpus : "--workers-per-gpu")
                        + ": this machine has no GPU (" + machine.noGpuReason().orElse("CUDA sees none")
                        + "); use --workers N for CPU-only workers");
            }
            return List.of(Optional.empty());
        }
        List<Machine.Gpu> chosen = chooseGpus(o.gpus == null ? "all" : o.gpus, machine.gpus());
        List<Optional<Machine.Gpu>> slots = new ArrayList<>();
        for (Machine.Gpu g : chosen) {
            for (int i = 0; i < each; i++) {
                slots.add(Optional.of(g));
            }
        }
        if (slots.size() > MAX_WORKERS) {
            throw new IllegalArgumentException(slots.size() + " workers: at most " + MAX_WORKERS);
        }
        return slots;
    }

    private static List<Machine.Gpu> chooseGpus(String spec, List<Machine.Gpu> gpus) {
        if (spec.trim().equalsIgnoreCase("all")) {
            return gpus;
        }
        List<Machine.Gpu> chosen = new ArrayList<>();
        for (String raw : spec.split(",", -1)) {
            String t = raw.trim();
            if (t.isEmpty()) {
                throw new IllegalArgumentException("--gpus " + spec + ": an empty entry");
            }
            if (t.chars().allMatch(Character::isDigit)) {
                int i;
                try {
                    i = Integer.parseInt(t);
                } catch (NumberFormatException e) {
                    i = Integer.MAX_VALUE;
                }
                if (i >= gpus.size()) {
                    throw new IllegalArgumentException("--gpus " + spec + ": no GPU " + t + " (this machine has "
                            + gpus.size() + ": 0.." + (gpus.size() - 1) + ")");
                }
                chosen.add(gpus.get(i));
                continue;
            }
            String want = t.toLowerCase(Locale.ROOT);
            String prefixed = want.startsWith("gpu-") || want.startsWith("mig-") ? want : "gpu-" + want;
            List<Machine.Gpu> matches = gpus.stream()
                    .filter(g -> g.uuid().toLowerCase(Locale.ROOT).startsWith(prefixed))
                    .toList();
            if (matches.size() != 1) {
                throw new IllegalArgumentException("--gpus " + spec + ": '" + t + "' "
                        + (matches.isEmpty() ? "is no GPU's index or UUID" : "matches " + matches.size() + " GPUs")
                        + " (GPUs: "
                        + gpus.stream().map(g -> g.index() + "=" + g.uuid()).toList() + ")");
            }
            chosen.add(matches.get(0));
        }
        return chosen;
    }

    private static List<String> rotated(List<Machine.Gpu> gpus, int first) {
        List<String> l = new ArrayList<>();
        for (int i = 0; i < gpus.size(); i++) {
            l.add(gpus.get((first + i) % gpus.size()).uuid());
        }
        return List.copyOf(l);
    }

    private static List<BitSet> givenCpus(String spec, int workers) {
        if (spec == null) {
            return null;
        }
        String[] lists = spec.split(":", -1);
        if (lists.length != 1 && lists.length != workers) {
            throw new IllegalArgumentException("--cpus " + spec + ": " + lists.length + " CPU lists for " + workers
                    + " workers (give one for all, or one per worker separated by ':')");
        }
        List<BitSet> sets = new ArrayList<>();
        for (int i = 0; i < workers; i++) {
            try {
                sets.add(CpuAffinity.parse(lists[lists.length == 1 ? 0 : i]));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("--cpus: " + e.getMessage(), e);
            }
        }
        return sets;
    }

    private static List<String> netDevices(String spec, List<Optional<Machine.Gpu>> slots) {
        if (spec == null || spec.equalsIgnoreCase("auto")) {
            return null;
        }
        String[] parts = spec.split(",", -1);
        for (String p : parts) {
            if (p.isBlank() || !p.trim().matches("[A-Za-z0-9_.:-]+")) {
                throw new IllegalArgumentException("--net-devices " + spec + ": '" + p
                        + "' is not a device name (expected for example eth0, mlx5_0:1, or auto)");
            }
        }
        List<String> out = new ArrayList<>();
        if (parts.length == 1) {
            slots.forEach(s -> out.add(parts[0].trim()));
            return out;
        }
        if (parts.length == slots.size()) {
            for (String p : parts) {
                out.add(p.trim());
            }
            return out;
        }
        List<Integer> gpuOrder = slots.stream()
                .flatMap(Optional::stream)
                .map(Machine.Gpu::index)
                .distinct()
                .toList();
        if (parts.length == gpuOrder.size() && !gpuOrder.isEmpty()) {
            for (Optional<Machine.Gpu> s : slots) {
                out.add(parts[gpuOrder.indexOf(s.orElseThrow().index())].trim());
            }
            return out;
        }
        throw new IllegalArgumentException("--net-devices " + spec + ": " + parts.length + " devices for "
                + slots.size() + " workers (give one for all, one per worker, or one per GPU)");
    }
}
