package io.qgpu.kubernetes.deviceplugin;

import io.qgpu.api.PlacementPolicy;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.kubernetes.node.AgentStartup;
import io.qgpu.kubernetes.node.GpuHealth;
import io.qgpu.kubernetes.node.PlacementEdits;
import io.qgpu.kubernetes.node.mps.MpsSupervisor;
import io.qgpu.kubernetes.node.sharing.NodeSharing;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.discovery.NvmlDeviceInfo;
import io.qgpu.nvml.discovery.NvmlDiscovery;
import io.qgpu.nvml.discovery.NvmlInventory;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The whole node agent: discovers the GPUs through NVML, builds the virtual devices and the ledger,
 * restores the state file, watches GPU health, and serves the kubelet.
 *
 * <pre>{@code
 * try (DevicePlugin plugin = DevicePlugin.start(PluginConfig.defaults(Path.of("/var/lib/kubelet/device-plugins"))
 *         .withNode(System.getenv("NODE_NAME")))) {
 *     plugin.awaitClose();
 * }
 * }</pre>
 *
 * <p>Thread safety: thread-safe.
 */
public final class DevicePlugin implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DevicePlugin.class);

    private final Nvml nvml;
    private final VirtualDevicePool pool;
    private final GpuHealth health;
    private final PluginServer server;
    private final ScheduledExecutorService timer;
    private final MpsSupervisor mps;
    private final java.util.concurrent.CountDownLatch closed = new java.util.concurrent.CountDownLatch(1);

    private DevicePlugin(Nvml nvml, VirtualDevicePool pool, GpuHealth health, PluginServer server,
                         ScheduledExecutorService timer, MpsSupervisor mps) {
        this.mps = mps;
        this.nvml = nvml;
        this.pool = pool;
        this.health = health;
        this.server = server;
        this.timer = timer;
    }

    /**
     * Starts everything; closes what it opened if a step fails. With {@code --sharing mps} it starts (or
     * adopts) an MPS control daemon for each of the node's GPUs (any of them may take shared slices) before it
     * serves, and ticks their supervisor on its timer every {@link SharingOptions#mpsTickEvery()}.
     *
     * @throws io.qgpu.api.InvalidValueException naming {@code --hami-core-library} when HAMi-core's library is missing
     */
    public static DevicePlugin start(PluginConfig c) throws IOException {
        NodeSharing sharing = c.sharing().open();
        Nvml nvml = AgentStartup.openNvml(c.nvmlLibrary(), c.fakeMachine());
        GpuHealth health = null;
        MpsSupervisor mps = null;
        try {
            NvmlInventory inv = NvmlDiscovery.builder().session(nvml).build().inventory(c.nodeName());
            Ledger ledger = Ledger.create(c.rules(), List.of(inv.node()));
            PlacementEngine engine = PlacementEngine.builder(ledger)
                    .policies(PlacementPolicy.BINPACK, PlacementPolicy.SPREAD).build();
            VirtualDevicePool pool = new VirtualDevicePool(inv.node(), ledger, engine, c.decisions(),
                    new StateFile(c.stateFile()), c.slotMemoryBytes());
            pool.restore();
            Map<String, Integer> minors = new LinkedHashMap<>();
            for (NvmlDeviceInfo d : inv.devices()) {
                minors.put(d.uuid(), d.minorNumber());
            }
            mps = c.sharing().supervisor(c.ticker()).orElse(null);
            if (mps != null) {
                mps.share(minors.keySet());
            }
            health = GpuHealth.start(nvml, pool::setHealth, c.ticker(), c.recoverAfter());
            PluginServer server = new PluginServer(c.pluginDir(), c.endpoint(), c.kubeletSocket(), Names.RESOURCE,
                    new DevicePluginService(pool, new ContainerEnvironment(new PlacementEdits(minors, sharing)))).start();
            ScheduledExecutorService timer = AgentStartup.timer("qgpu-device-plugin-health", health, c.recoveryCheckEvery(),
                    mps, c.sharing().mpsTickEvery());
            LOG.info("node {}: {} GPU(s), {} virtual device(s) of {}, sharing back end {}", c.nodeName(), inv.node().gpus().size(),
                    pool.devices().size(), Names.RESOURCE, sharing.backend().wireName());
            return new DevicePlugin(nvml, pool, health, server, timer, mps);
        } catch (IOException | RuntimeException e) {
            if (mps != null) {
                mps.close();
            }
            if (health != null) {
                health.close();
            }
            nvml.close();
            throw e;
        }
    }

    public VirtualDevicePool pool() {
        return pool;
    }

    public GpuHealth health() {
        return health;
    }

    public PluginServer server() {
        return server;
    }

    /** The supervisor of the node's MPS control daemons, with {@code --sharing mps}. */
    public Optional<MpsSupervisor> mps() {
        return Optional.ofNullable(mps);
    }

    /** Blocks until {@link #close()}. */
    public void awaitClose() throws InterruptedException {
        closed.await();
    }

    @Override
    public void close() {
        try {
            if (timer != null) {
                timer.shutdownNow();
            }
            server.close();
            health.close();
        } finally {
            if (mps != null) {
                mps.close();   // quits every daemon
            }
            nvml.close();
            closed.countDown();
        }
    }
}
