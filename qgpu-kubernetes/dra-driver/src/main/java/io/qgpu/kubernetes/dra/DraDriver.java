package io.qgpu.kubernetes.dra;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.kubernetes.node.AgentStartup;
import io.qgpu.kubernetes.node.CdiSpecs;
import io.qgpu.kubernetes.node.GpuHealth;
import io.qgpu.kubernetes.node.PlacementEdits;
import io.qgpu.kubernetes.node.dra.DraNames;
import io.qgpu.kubernetes.node.mps.ComputeModes;
import io.qgpu.kubernetes.node.mps.MpsLimits;
import io.qgpu.kubernetes.node.mps.MpsNode;
import io.qgpu.kubernetes.node.mps.MpsSupervisor;
import io.qgpu.kubernetes.node.reconcile.NodeReconciler;
import io.qgpu.kubernetes.node.reconcile.NodeResource;
import io.qgpu.kubernetes.node.reconcile.OpenedResources;
import io.qgpu.kubernetes.node.sharing.NodeSharing;
import io.qgpu.kubernetes.node.sharing.SharingBackend;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.discovery.NvmlDiscovery;
import io.qgpu.nvml.discovery.NvmlInventory;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The whole DRA driver on a node: discovers the GPUs through NVML, builds the ledger, restores the prepared
 * claims (the desired state), brings the node into line with it through one {@link NodeReconciler} (with
 * {@code --sharing mps} the MPS shared-memory directory, the GPUs' compute mode, the MPS daemons and their
 * limits ({@link MpsNode}), with {@code --sharing hami-core} its directories, the CDI specs, the ResourceSlice),
 * watches GPU health, sweeps stale claims, and serves the kubelet (DRA services, then registration).
 *
 * <p>Start-up opens each part in that order and records it the moment it is open ({@link OpenedResources});
 * a step that fails closes exactly what was opened, newest first, so a failed start leaves nothing serving and
 * no NVML session open. {@link #close()} closes the same way. The reconciler runs a first pass before the
 * driver serves (writing back missing CDI specs, removing those of claims it does not hold, publishing the
 * slice), then after every prepare, unprepare and health change, and on its timer with back-off while a step
 * fails: a slice that cannot be published while the API server is away is published once it answers.
 *
 * <pre>{@code
 * try (KubernetesClient client = new KubernetesClientBuilder().build();
 *      DraDriver driver = DraDriver.start(DriverConfig.defaults("node-a"), client)) {
 *     driver.awaitClose();
 * }
 * }</pre>
 *
 * <p>Thread safety: thread-safe.
 */
public final class DraDriver implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DraDriver.class);

    private final OpenedResources opened;
    private final GpuHealth health;
    private final PreparedClaims claims;
    private final SlicePublisher slices;
    private final RegistrationService registration;
    private final MpsSupervisor mps;
    private final NodeReconciler reconciler;
    private final StaleClaimSweep sweep;
    private final CountDownLatch closed = new CountDownLatch(1);
    private final AtomicBoolean closing = new AtomicBoolean();

    private DraDriver(OpenedResources opened, GpuHealth health, PreparedClaims claims, SlicePublisher slices,
                      RegistrationService registration, MpsSupervisor mps, NodeReconciler reconciler, StaleClaimSweep sweep) {
        this.opened = opened;
        this.health = health;
        this.claims = claims;
        this.slices = slices;
        this.registration = registration;
        this.mps = mps;
        this.reconciler = reconciler;
        this.sweep = sweep;
    }

    /**
     * Starts everything with the state file of the configuration; closes what it opened if a step fails. With
     * {@code --sharing mps} the reconciler's first pass adopts (or, with {@code --mps-daemons agent}, starts) an
     * MPS control daemon for each GPU no exclusive claim holds, puts those GPUs in {@code EXCLUSIVE_PROCESS} and
     * sets the daemons' limits, before the driver serves; a daemon that does not answer yet is only reported (the
     * start does not fail), and its GPU's shared claims are refused until it does. The supervisor is ticked on the
     * driver's timer every {@link SharingOptions#mpsTickEvery()}.
     *
     * @throws io.qgpu.api.InvalidValueException naming {@code --hami-core-library} when HAMi-core's library is missing
     */
    public static DraDriver start(DriverConfig c, KubernetesClient client) throws IOException {
        return start(c, client, store -> store);
    }

    /** As {@link #start(DriverConfig, KubernetesClient)}, with the claim store wrapped (tests stop a driver between saving and answering). */
    static DraDriver start(DriverConfig c, KubernetesClient client, Function<ClaimStore, ClaimStore> wrap) throws IOException {
        NodeSharing sharing = c.sharing().open();
        OpenedResources opened = new OpenedResources("qgpu-dra-driver on " + c.nodeName());
        try {
            Nvml nvml = opened.add("NVML session", AgentStartup.openNvml(c.nvmlLibrary(), c.fakeMachine()));
            NvmlInventory inv = NvmlDiscovery.builder().session(nvml).build().inventory(c.nodeName());
            NodeGpus gpus = new NodeGpus(inv);
            Ledger ledger = Ledger.create(c.rules(), List.of(inv.node()));
            CdiSpecs cdi = new CdiSpecs(c.cdiRoot());
            AgentStartup.removeUnfinishedWrites(c.stateFile(), Optional.of(cdi));   // before the first write
            PreparedClaims claims = new PreparedClaims(ledger, wrap.apply(new DriverStateFile(c.stateFile(), c.nodeName(), c.bootId())),
                    cdi, new PlacementEdits(gpus.minors(), sharing),
                    sharing.backend() == SharingBackend.HAMI_CORE ? Optional.of(c.sharing().hamiCoreCacheRoot()) : Optional.empty());
            MpsSupervisor mps = c.sharing().supervisor(c.ticker()).orElse(null);
            claims.restore();
            SlicePublisher slices = new SlicePublisher(client, c.nodeName(), gpus, c.rules());
            List<NodeResource<?>> resources = new ArrayList<>();
            if (mps != null) {
                // any GPU no exclusive claim holds may take shared claims: each gets its daemon before the driver serves
                opened.add("MPS supervisor", mps);
                MpsLimits floor = MpsLimits.smallest(c.rules());
                MpsNode mpsNode = new MpsNode(mps, ComputeModes.nvml(nvml), c.sharing().mpsLayout(), c.sharing().mpsShmDirectory(),
                        () -> MpsNode.sharedGpus(gpus.minors().keySet(), ledger.placements()),
                        gpu -> MpsLimits.forGpu(gpu, ledger.placements(), floor));
                resources.addAll(mpsNode.resources());
                claims.attachMps(mpsNode);
            }
            resources.addAll(claims.resources());
            resources.add(slices);
            NodeReconciler reconciler = new NodeReconciler("qgpu-dra-driver", resources, c.reconcile(), c.ticker());
            claims.attach(reconciler);
            NodeReconciler.Report first = reconciler.reconcile();
            if (!first.converged()) {
                LOG.warn("the node is not yet in line with the prepared claims; retried with back-off: {}", first.failures());
            }
            ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "qgpu-dra-driver-reconcile");
                t.setDaemon(true);
                return t;
            });
            opened.add("reconcile timer", () -> stop(timer));
            opened.add("reconciler", reconciler);
            reconciler.start(timer);
            GpuHealth health = opened.add("GPU health watch", GpuHealth.start(nvml, (uuid, h) -> {
                if (gpus.byUuid(uuid).isPresent()) {
                    ledger.setHealth(uuid, h);
                }
                if (slices.setHealth(uuid, h)) {
                    reconciler.trigger();
                }
            }, c.ticker(), c.recoverAfter()));
            StaleClaimSweep sweep = new StaleClaimSweep(client, claims);
            if (!c.staleClaimCheckEvery().isZero()) {
                long every = c.staleClaimCheckEvery().toMillis();
                timer.scheduleWithFixedDelay(() -> {
                    try {
                        sweep.sweep();
                    } catch (RuntimeException e) {
                        LOG.warn("stale-claim sweep failed", e);
                    }
                }, 0, every, TimeUnit.MILLISECONDS);
            }
            ClaimPreparer preparer = new ClaimPreparer(client, c.nodeName(), gpus, claims, c.rules());
            RegistrationService registration = new RegistrationService(c.draSocket());
            DriverSockets sockets = opened.add("kubelet sockets", new DriverSockets(c.draSocket(), c.registrationSocket()));
            sockets.start(List.of(new DraServiceV1(preparer), new DraServiceV1beta1(preparer)), registration);
            ScheduledExecutorService healthTimer = AgentStartup.timer("qgpu-dra-driver-health", health, c.recoveryCheckEvery(),
                    mps, c.sharing().mpsTickEvery());
            if (healthTimer != null) {
                opened.add("health timer", () -> stop(healthTimer));
            }
            LOG.info("{} on node {}: {} GPU(s) published, {} prepared claim(s), sharing back end {}", DraNames.DRIVER, c.nodeName(),
                    gpus.all().size(), claims.all().size(), sharing.backend().wireName());
            return new DraDriver(opened, health, claims, slices, registration, mps, reconciler, sweep);
        } catch (IOException | RuntimeException e) {
            opened.closeAfterFailure(e);
            throw e;
        }
    }

    /** Stops a timer and waits (at most 5 s) until its thread has ended. */
    private static void stop(ScheduledExecutorService timer) throws InterruptedException {
        timer.shutdownNow();
        if (!timer.awaitTermination(5, TimeUnit.SECONDS)) {
            LOG.warn("a timer of the driver did not stop within 5 s");
        }
    }

    /** The GPU health watch (tests call {@link GpuHealth#recoverDue()} after moving their clock). */
    public GpuHealth health() {
        return health;
    }

    /** The supervisor of the node's MPS control daemons, with {@code --sharing mps}. */
    public Optional<MpsSupervisor> mps() {
        return Optional.ofNullable(mps);
    }

    /** The reconciler that keeps the node in line with the prepared claims (tests run its passes). */
    public NodeReconciler reconciler() {
        return reconciler;
    }

    /** Checks every prepared claim against the API server now and unprepares the stale ones; their uids. */
    public List<String> sweep() {
        return sweep.sweep();
    }

    PreparedClaims claims() {
        return claims;
    }

    SlicePublisher slices() {
        return slices;
    }

    RegistrationService registration() {
        return registration;
    }

    /** Blocks until {@link #close()}. */
    public void awaitClose() throws InterruptedException {
        closed.await();
    }

    /**
     * Stops serving, the timers and the health watch, stops supervising the MPS daemons (they keep running, and a
     * restarted driver adopts them) and closes the NVML session, newest first; the ResourceSlice stays published
     * (a restart replaces it). Idempotent.
     */
    @Override
    public void close() {
        if (!closing.compareAndSet(false, true)) {
            return;
        }
        try {
            opened.close();
        } finally {
            closed.countDown();
        }
    }
}
