package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --net-devices auto} on a made-up sysfs: two root complexes, a GPU and an Ethernet NIC under one
 * switch, a ConnectX (RDMA) NIC nearer another GPU, an interface that is down, and a virtual one.
 */
class NearestNetDeviceTest {
    @TempDir
    Path sys;

    private static final String GPU_A = "0000:18:00.0";
    private static final String GPU_B = "0000:86:00.0";

    @BeforeEach
    void machine() throws IOException {
        Path root0 = sys.resolve("devices/pci0000:00/0000:00:01.0/0000:17:00.0");
        Path root8 = sys.resolve("devices/pci0000:80/0000:80:01.0/0000:85:00.0");
        pci(root0.resolve(GPU_A), GPU_A);
        pci(root0.resolve("0000:19:00.0"), "0000:19:00.0"); // Ethernet beside GPU A
        pci(root8.resolve(GPU_B), GPU_B);
        Path cx = pci(root8.resolve("0000:87:00.0"), "0000:87:00.0"); // ConnectX beside GPU B
        Files.createDirectories(cx.resolve("infiniband/mlx5_0"));
        Path far = pci(sys.resolve("devices/pci0000:00/0000:00:02.0/0000:01:00.0"), "0000:01:00.0");
        net("eth0", far, "up");
        net("eth1", root0.resolve("0000:19:00.0"), "up");
        net("eth2", root0.resolve("0000:19:00.0"), "down");
        net("ens8", root8.resolve("0000:87:00.0"), "up");
        Files.createDirectories(sys.resolve("class/net/lo"));
        Files.writeString(sys.resolve("class/net/lo/operstate"), "unknown");
    }

    private Path pci(Path device, String busId) throws IOException {
        Files.createDirectories(device);
        Files.createDirectories(sys.resolve("bus/pci/devices"));
        Files.createSymbolicLink(sys.resolve("bus/pci/devices").resolve(busId), device);
        return device;
    }

    private void net(String name, Path device, String state) throws IOException {
        Path iface = Files.createDirectories(sys.resolve("class/net").resolve(name));
        Files.createSymbolicLink(iface.resolve("device"), device);
        Files.writeString(iface.resolve("operstate"), state + "\n");
    }

    @Test
    void theNearestUpInterface() {
        NearestNetDevice.Choice c = NearestNetDevice.choose(sys, GPU_A, false).orElseThrow();
        assertEquals("eth1", c.device());
        assertTrue(c.reason().contains("2 PCI hops"), c.reason());
    }

    @Test
    void anRdmaNicOnlyWithInfiniband() {
        NearestNetDevice.Choice tcpOnly =
                NearestNetDevice.choose(sys, GPU_B, false).orElseThrow();
        assertEquals("ens8", tcpOnly.device());
        assertTrue(tcpOnly.reason().contains("set --infiniband true to use mlx5_0:1"), tcpOnly.reason());
        assertEquals(
                "mlx5_0:1",
                NearestNetDevice.choose(sys, GPU_B, true).orElseThrow().device());
    }

    @Test
    void nothingWhenTheGpuIsUnknown() {
        assertEquals(Optional.empty(), NearestNetDevice.choose(sys, "0000:99:00.0", false));
    }
}
