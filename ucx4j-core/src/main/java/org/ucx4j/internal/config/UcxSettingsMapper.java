package org.ucx4j.internal.config;

import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SortedMap;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.ConfigKey;
import org.ucx4j.UcxKeys;

/**
 * Turns a resolved configuration into UCX settings, exactly as distributed-ucxx does.
 *
 * <ul>
 *   <li>If any of tcp, nvlink, infiniband is true, transports are managed: {@code TLS} starts as
 *       {@code tcp}; {@code cuda_copy} is appended for cuda-copy or nvlink; {@code rc,} is prefixed
 *       for infiniband; {@code cuda_ipc} is appended for nvlink (all on:
 *       {@code rc,tcp,cuda_copy,cuda_ipc}). {@code SOCKADDR_TLS_PRIORITY} is {@code rdmacm} when
 *       rdmacm is true, else {@code tcp}.</li>
 *   <li>{@code net-devices} sets {@code NET_DEVICES}.</li>
 *   <li>Each {@code environment} entry {@code some-key: v} becomes {@code SOME_KEY=v}, unless it
 *       clashes with one of the options above (ignored, with a warning), or the process environment
 *       already has {@code UCX_SOME_KEY} (ignored: the outside environment wins).</li>
 *   <li>The outside environment also wins over the managed options, as distributed-ucxx's
 *       {@code env_takes_precedence} does.</li>
 *   <li>Options UCX reads only at load ({@link UcsGlobalOptions}) go to the global map.</li>
 * </ul>
 * Nothing set gives no settings at all (UCX's own defaults, {@code TLS=all}).
 *
 * <p>Threading: stateless, safe everywhere.
 */
public final class UcxSettingsMapper {
    private static final Logger LOG = LoggerFactory.getLogger(UcxSettingsMapper.class);

    private UcxSettingsMapper() {}

    /**
     * The mapped settings.
     *
     * @param context options for {@code ucp_config_modify}, without {@code UCX_}, in order
     * @param global options to {@code setenv} as {@code UCX_<name>} before UCX loads, in order
     * @param sources for each option of either map, the config key and source it came from
     */
    public record Mapped(Map<String, String> context, Map<String, String> global, Map<String, String> sources) {
        /**
         * Makes the maps unmodifiable, keeping their order.
         *
         * @param context the context options
         * @param global the global options
         * @param sources the sources
         */
        public Mapped {
            context = Collections.unmodifiableMap(new LinkedHashMap<>(context));
            global = Collections.unmodifiableMap(new LinkedHashMap<>(global));
            sources = Collections.unmodifiableMap(new LinkedHashMap<>(sources));
        }
    }

    /**
     * Maps a configuration.
     *
     * @param config the resolved configuration (its {@code UCX_*} snapshot decides "outside wins")
     * @return the settings
     */
    public static Mapped map(ResolvedConfig config) {
        Map<String, String> managed = new LinkedHashMap<>();
        Map<String, String> managedSources = new LinkedHashMap<>();
        boolean tcp = isTrue(config.value(UcxKeys.TCP));
        boolean nvlink = isTrue(config.value(UcxKeys.NVLINK));
        boolean infiniband = isTrue(config.value(UcxKeys.INFINIBAND));
        if (tcp || nvlink || infiniband) {
            String tls = "tcp";
            if (nvlink || isTrue(config.value(UcxKeys.CUDA_COPY))) {
                tls += ",cuda_copy";
            }
            if (infiniband) {
                tls = "rc," + tls;
            }
            if (nvlink) {
                tls += ",cuda_ipc";
            }
            managed.put("TLS", tls);
            managedSources.put(
                    "TLS", describe(config, UcxKeys.TCP, UcxKeys.NVLINK, UcxKeys.INFINIBAND, UcxKeys.CUDA_COPY));
            boolean rdmacm = isTrue(config.value(UcxKeys.RDMACM));
            managed.put("SOCKADDR_TLS_PRIORITY", rdmacm ? "rdmacm" : "tcp");
            managedSources.put(
                    "SOCKADDR_TLS_PRIORITY",
                    describe(config, UcxKeys.TCP, UcxKeys.NVLINK, UcxKeys.INFINIBAND, UcxKeys.RDMACM));
        }
        String netDevices = config.value(UcxKeys.NET_DEVICES);
        if (netDevices != null) {
            managed.put("NET_DEVICES", netDevices);
            managedSources.put("NET_DEVICES", "net-devices (" + config.origin(UcxKeys.NET_DEVICES) + ")");
        }

        Map<String, String> context = new LinkedHashMap<>();
        Map<String, String> global = new LinkedHashMap<>();
        Map<String, String> sources = new LinkedHashMap<>();
        managed.forEach((name, value) -> {
            String outside = config.ucxVariables().get("UCX_" + name);
            if (outside != null) {
                LOG.info(
                        "not setting UCX {}={} from {}: the environment's UCX_{}={} wins",
                        name,
                        value,
                        managedSources.get(name),
                        name,
                        outside);
            } else {
                context.put(name, value);
                sources.put(name, managedSources.get(name));
            }
        });
        SortedMap<String, ResolvedValue> entries = config.environment();
        entries.forEach((entry, resolved) -> {
            String name = ConfigSchema.ucxOptionName(entry);
            String value = (String) resolved.value();
            String outside = config.ucxVariables().get("UCX_" + name);
            if (managed.containsKey(name)) {
                LOG.warn(
                        "ignoring environment.{}={} (UCX_{}) from {}: {}={} is managed by {}",
                        entry,
                        value,
                        name,
                        resolved.origin(),
                        name,
                        managed.get(name),
                        managedSources.get(name));
            } else if (outside != null) {
                LOG.info(
                        "ignoring environment.{}={} from {}: the environment's UCX_{}={} wins",
                        entry,
                        value,
                        resolved.origin(),
                        name,
                        outside);
            } else {
                (UcsGlobalOptions.isGlobal(name) ? global : context).put(name, value);
                sources.put(name, "environment." + entry + " (" + resolved.origin() + ")");
            }
        });
        return new Mapped(context, global, sources);
    }

    /** The keys that are true, with their sources: "tcp=true (env UCX4J__TCP), nvlink=true (builder)". */
    private static String describe(ResolvedConfig config, ConfigKey<?>... keys) {
        return Arrays.stream(keys)
                .filter(k -> Boolean.TRUE.equals(config.value(k)))
                .map(k -> k.name() + "=true (" + config.origin(k) + ")")
                .collect(Collectors.joining(", "));
    }

    private static boolean isTrue(Boolean value) {
        return Boolean.TRUE.equals(value);
    }
}
