package io.qgpu.kubernetes.deviceplugin;

import io.qgpu.api.Health;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.kubernetes.node.AgentStartup;
import io.qgpu.kubernetes.node.GpuHealth;
import io.qgpu.kubernetes.node.PlacementEdits;
import io.qgpu.kubernetes.node.mps.ComputeModes;
import io.qgpu.kubernetes.node.mps.MpsLimits;
import io.qgpu.kubernetes.node.mps.MpsNode;
import io.qgpu.kubernetes.node.mps.MpsSupervisor;
import io.qgpu.kubernetes.node.reconcile.NodeReconciler;
import io.qgpu.kubernetes.node.reconcile.NodeResource;
import io.qgpu.kubernetes.node.reconcile.OpenedResources;
import io.qgpu.kubernetes.node.reconcile.OwnedDirectories;
import io.qgpu.kubernetes.node.sharing.SharingEdits;
import io.qgpu.kubernetes.node.sharing.NodeSharing;
import io.qgpu.kubernetes.node.sharing.SharingBackend;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.discovery.NvmlDeviceInfo;
import io.qgpu.nvml.discovery.NvmlDiscovery;
import io.qgpu.nvml.discovery.NvmlInventory;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The whole node agent: discovers the GPUs through NVML, builds the virtual devices and the ledger,
 * restores the state file, watches GPU health, serves the kubelet, and runs one reconciler over the
 * plugin's side effects.
 *
 * <pre>{@code
 * try (DevicePlugin plugin = DevicePlugin.start(PluginConfig.defaults(Path.of("/var/lib/kubelet/device-plugins"))
 *         .withNode(System.getenv("NODE_NAME")))) {
 *     plugin.awaitClose();
 * }
 * }</pre>
 *
 * <p><b>Start and shutdown.</b> {@link #start} opens, in this order, the NVML session, the MPS supervisor
 * (with {@code --sharing mps}), the GPU health watch, the plugin's server (socket, directory watch,
 * registration), the timer, and the reconciler, adding each to one {@link OpenedResources} the moment it is
 * open. A step that fails closes exactly what was opened before it, newest first, and the start throws;
 * {@link #close()} closes the same list, newest first, and a second close does nothing. Closing the MPS
 * supervisor leaves the daemons running (a restarted plugin adopts them).
 *
 * <p><b>The reconciler</b> ({@link #reconciler()}): its desired state is the pool's live allocations (and the
 * node's GPUs). Its resources, in order:
 * <ol>
 *   <li>{@value #SHARED_PATHS} (with {@code --sharing hami-core}): the host paths the containers share, HAMi-core's
 *       lock directory and its {@code ld.so.preload} file; desired: those the live allocations' answers name
 *       ({@link ContainerEnvironment#sharedPaths}); made to hold again when missing or changed (each
 *       {@code Allocate} creates them first); never removed;</li>
 *   <li>{@value #HAMI_CORE_CACHE} (with {@code --sharing hami-core}): the per-container cache directories under
 *       {@code --hami-core-cache-root}; desired: those the live allocations' answers name
 *       ({@link ContainerEnvironment#ownedDirectories}); a missing one is created, any other subdirectory removed
 *       (one whose allocation is gone: released when its id was handed out again, dropped at restore, or left
 *       by a crash). A removal is re-checked under the pool's lock, so a directory an {@code Allocate} is
 *       creating is never removed;</li>
 *   <li>with {@code --sharing mps}, the node's MPS side ({@link MpsNode}): the MPS shared-memory directory, each
 *       shared GPU in {@code EXCLUSIVE_PROCESS}, its control daemon adopted (or, with {@code --mps-daemons agent},
 *       started; the supervisor's own ticks restart one that fails) and the daemon's limits from the slices on the
 *       GPU; the shared GPUs are the node's GPUs less those an exclusive allocation holds. {@code Allocate} does not
 *       wait for them: the pass it triggers brings a changed GPU in line, usually before the container
 *       starts;</li>
 *   <li>{@value #DEVICE_LIST}: every ListAndWatch subscriber has been sent the current device list
 *       ({@link VirtualDevicePool#sendCurrentList}; a no-op when it was);</li>
 *   <li>{@value #STATE_FILE}: the state file holds the live allocations ({@link VirtualDevicePool#ensureSaved()};
 *       a no-op unless a save failed or its outcome is unknown).</li>
 * </ol>
 * It runs once during {@link #start} (after the state file is restored, before the plugin serves), then on the
 * plugin's timer every {@link NodeReconciler.Settings#period()} and soon after every {@code Allocate} (answered
 * or refused) and every health change, with per-key back-off on {@link PluginConfig#ticker()}.
 * {@link PluginConfig#withReconcileEvery} zero keeps it off the timer; tests then call
 * {@code reconciler().reconcile()}.
 *
 * <p>Thread safety: thread-safe.
 */
public final class DevicePlugin implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DevicePlugin.class);

    /** The reconciler's resource of the host paths the containers share (HAMi-core's lock directory and preload file). */
    public static final String SHARED_PATHS = "shared-path";
    /** The reconciler's resource of HAMi-core's per-container cache directories. */
    public static final String HAMI_CORE_CACHE = "hami-core-cache";
    /** The reconciler's resource of the device list sent to each ListAndWatch subscriber. */
    public static final String DEVICE_LIST = "device-list";
    /** The reconciler's resource of the state file. */
    public static final String STATE_FILE = "state-file";

    private final OpenedResources opened;
    private final VirtualDevicePool pool;
    private final GpuHealth health;
    private final PluginServer server;
    private final MpsSupervisor mps;
    private final NodeReconciler reconciler;
    private final CountDownLatch closed = new CountDownLatch(1);

    private DevicePlugin(OpenedResources opened, VirtualDevicePool pool, GpuHealth health, PluginServer server,
                         MpsSupervisor mps, NodeReconciler reconciler) {
        this.opened = opened;
        this.pool = pool;
        this.health = health;
        this.server = server;
        this.mps = mps;
        this.reconciler = reconciler;
    }

    /**
     * Starts everything; closes what it opened, newest first, if a step fails. With {@code --sharing mps} the
     * reconciler's first pass starts (or adopts) an MPS control daemon for each of the node's GPUs (any of them
     * may take shared slices) before the plugin serves, and the timer ticks their supervisor every
     * {@link SharingOptions#mpsTickEvery()}.
     *
     * @throws io.qgpu.api.InvalidValueException naming {@code --hami-core-library} when HAMi-core's library is missing
     */
    public static DevicePlugin start(PluginConfig c) throws IOException {
        return start(c, StateFile::new);
    }

    /** As {@link #start(PluginConfig)}, keeping the allocations in the store made for the state file's path (tests). */
    static DevicePlugin start(PluginConfig c, Function<Path, AllocationStore> stores) throws IOException {
        NodeSharing sharing = c.sharing().open();
        OpenedResources opened = new OpenedResources("qgpu-device-plugin");
        try {
            Nvml nvml = opened.add("NVML session", AgentStartup.openNvml(c.nvmlLibrary(), c.fakeMachine()));
            NvmlInventory inv = NvmlDiscovery.builder().session(nvml).build().inventory(c.nodeName());
            Ledger ledger = Ledger.create(c.rules(), List.of(inv.node()));
            PlacementEngine engine = PlacementEngine.builder(ledger)
                    .policies(PlacementPolicy.BINPACK, PlacementPolicy.SPREAD).build();
            AgentStartup.removeUnfinishedWrites(c.stateFile(), Optional.empty());   // before the first write
            VirtualDevicePool pool = new VirtualDevicePool(inv.node(), ledger, engine, c.decisions(),
                    stores.apply(c.stateFile()), c.slotMemoryBytes());
            pool.restore();
            Map<String, Integer> minors = new LinkedHashMap<>();
            for (NvmlDeviceInfo d : inv.devices()) {
                minors.put(d.uuid(), d.minorNumber());
            }
            ContainerEnvironment environment = new ContainerEnvironment(new PlacementEdits(minors, sharing));
            MpsSupervisor mps = c.sharing().supervisor(c.ticker()).map(s -> opened.add("MPS supervisor", s)).orElse(null);
            MpsNode mpsNode = mps == null ? null : mpsNode(c, mps, nvml, ledger, minors.keySet());
            NodeReconciler reconciler = new NodeReconciler("qgpu-device-plugin",
                    resources(c, sharing.backend(), pool, environment, mpsNode), c.reconcile(), c.ticker());
            NodeReconciler.Report first = reconciler.reconcile();
            if (!first.converged()) {
                LOG.warn("node {}: the first reconcile pass left {} step(s) failing; retried with back-off: {}", c.nodeName(),
                        first.failures().size(), first.failures());
            }
            BiConsumer<String, Health> sink = (gpu, h) -> {
                pool.setHealth(gpu, h);
                reconciler.trigger();
            };
            GpuHealth health = opened.add("GPU health watch", GpuHealth.start(nvml, sink, c.ticker(), c.recoverAfter()));
            PluginServer server = opened.add("plugin server", new PluginServer(c.pluginDir(), c.endpoint(), c.kubeletSocket(),
                    Names.RESOURCE, new DevicePluginService(pool, environment, reconciler::trigger)).start());
            ScheduledExecutorService timer = AgentStartup.timer("qgpu-device-plugin-health", health, c.recoveryCheckEvery(),
                    mps, c.sharing().mpsTickEvery());
            if (timer == null && c.reconcileOnTimer()) {
                timer = Executors.newSingleThreadScheduledExecutor(r -> {
                    Thread t = new Thread(r, "qgpu-device-plugin-timer");
                    t.setDaemon(true);
                    return t;
                });
            }
            if (timer != null) {
                ScheduledExecutorService t = timer;
                opened.add("timer", () -> shutDown(t));
            }
            opened.add("reconciler", reconciler);
            if (c.reconcileOnTimer()) {
                reconciler.start(timer);
            }
            LOG.info("node {}: {} GPU(s), {} virtual device(s) of {}, sharing back end {}", c.nodeName(), inv.node().gpus().size(),
                    pool.devices().size(), Names.RESOURCE, sharing.backend().wireName());
            return new DevicePlugin(opened, pool, health, server, mps, reconciler);
        } catch (IOException | RuntimeException e) {
            opened.closeAfterFailure(e);
            throw e;
        }
    }

    /** The node's MPS side: the GPUs no exclusive allocation holds, their limits from the ledger's slices. */
    private static MpsNode mpsNode(PluginConfig c, MpsSupervisor mps, Nvml nvml, Ledger ledger, Set<String> gpus) {
        List<String> all = List.copyOf(gpus);
        MpsLimits floor = MpsLimits.smallest(c.rules());
        return new MpsNode(mps, ComputeModes.nvml(nvml), c.sharing().mpsLayout(), c.sharing().mpsShmDirectory(),
                () -> MpsNode.sharedGpus(all, ledger.placements()),
                gpu -> MpsLimits.forGpu(gpu, ledger.placements(), floor));
    }

    /** The reconciler's resources, in the order their keys are ensured (see the class comment). */
    private static List<NodeResource<?>> resources(PluginConfig c, SharingBackend backend, VirtualDevicePool pool,
                                                   ContainerEnvironment environment, MpsNode mps) {
        List<NodeResource<?>> out = new ArrayList<>();
        if (backend == SharingBackend.HAMI_CORE) {
            out.add(NodeResource.<SharingEdits.HostPath>of(SHARED_PATHS, () -> environment.sharedPaths(pool.allocations()), Set::of,
                    SharingEdits.HostPath::create, p -> { }));
            Path root = c.sharing().hamiCoreCacheRoot();
            OwnedDirectories dirs = new OwnedDirectories(HAMI_CORE_CACHE, root,
                    () -> environment.ownedDirectories(pool.allocations(), root), SharingEdits.HostDirectory.ANY_UID);
            out.add(NodeResource.of(HAMI_CORE_CACHE, dirs::desired, dirs::present, dirs::ensure,
                    dir -> pool.locked(() -> {
                        // re-checked under the pool's lock: an Allocate may have created it since the pass began
                        if (!dirs.desired().contains(dir)) {
                            dirs.remove(dir);
                        }
                        return null;
                    })));
        }
        if (mps != null) {
            out.addAll(mps.resources());
        }
        out.add(NodeResource.<Long>of(DEVICE_LIST, pool::subscribers, pool::subscribers, pool::sendCurrentList, id -> { }));
        String state = c.stateFile().toAbsolutePath().toString();
        out.add(NodeResource.<String>of(STATE_FILE, () -> Set.of(state), () -> Set.of(state), f -> pool.ensureSaved(), f -> { }));
        return out;
    }

    private static void shutDown(ScheduledExecutorService timer) throws InterruptedException {
        timer.shutdownNow();
        if (!timer.awaitTermination(10, TimeUnit.SECONDS)) {
            LOG.warn("the plugin's timer did not stop within 10 s");
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

    /** The reconciler of the plugin's side effects (see the class comment). */
    public NodeReconciler reconciler() {
        return reconciler;
    }

    /** The supervisor of the node's MPS control daemons, with {@code --sharing mps}. */
    public Optional<MpsSupervisor> mps() {
        return Optional.ofNullable(mps);
    }

    /** What is open, oldest first (empty once closed). */
    List<String> opened() {
        return opened.names();
    }

    /** Blocks until {@link #close()}. */
    public void awaitClose() throws InterruptedException {
        closed.await();
    }

    /** Closes what {@link #start} opened, newest first (the MPS daemons keep running). Idempotent. */
    @Override
    public void close() {
        try {
            opened.close();
        } finally {
            closed.countDown();
        }
    }
}
