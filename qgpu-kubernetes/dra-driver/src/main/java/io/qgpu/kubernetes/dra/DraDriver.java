package io.qgpu.kubernetes.dra;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.kubernetes.node.CdiSpecs;
import io.qgpu.kubernetes.node.AgentStartup;
import io.qgpu.kubernetes.node.GpuHealth;
import io.qgpu.kubernetes.node.PlacementEdits;
import io.qgpu.kubernetes.node.mps.MpsSupervisor;
import io.qgpu.kubernetes.node.sharing.NodeSharing;
import io.qgpu.kubernetes.node.sharing.SharingOptions;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.discovery.NvmlDiscovery;
import io.qgpu.nvml.discovery.NvmlInventory;
import java.io.IOException;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The whole DRA driver on a node: discovers the GPUs through NVML, builds the ledger, restores the
 * prepared claims, publishes the ResourceSlice, watches GPU health, and serves the kubelet (DRA services,
 * then registration).
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

    private final Nvml nvml;
    private final GpuHealth health;
    private final DriverSockets sockets;
    private final ScheduledExecutorService timer;
    private final PreparedClaims claims;
    private final SlicePublisher slices;
    private final RegistrationService registration;
    private final MpsSupervisor mps;
    private final CountDownLatch closed = new CountDownLatch(1);
    private final java.util.concurrent.atomic.AtomicBoolean closing = new java.util.concurrent.atomic.AtomicBoolean();

    private DraDriver(Nvml nvml, GpuHealth health, DriverSockets sockets, ScheduledExecutorService timer, PreparedClaims claims,
                      SlicePublisher slices, RegistrationService registration, MpsSupervisor mps) {
        this.mps = mps;
        this.nvml = nvml;
        this.health = health;
        this.sockets = sockets;
        this.timer = timer;
        this.claims = claims;
        this.slices = slices;
        this.registration = registration;
    }

    /**
     * Starts everything with the state file of the configuration; closes what it opened if a step fails. With
     * {@code --sharing mps} it starts (or adopts) an MPS control daemon for each of the node's GPUs (any of them
     * may take shared claims) before it serves, and ticks their supervisor on its timer every
     * {@link SharingOptions#mpsTickEvery()}.
     *
     * @throws io.qgpu.api.InvalidValueException naming {@code --hami-core-library} when HAMi-core's library is missing
     */
    public static DraDriver start(DriverConfig c, KubernetesClient client) throws IOException {
        return start(c, client, store -> store);
    }

    /** As {@link #start(DriverConfig, KubernetesClient)}, with the claim store wrapped (tests stop a driver between saving and answering). */
    static DraDriver start(DriverConfig c, KubernetesClient client, Function<ClaimStore, ClaimStore> wrap) throws IOException {
        NodeSharing sharing = c.sharing().open();
        Nvml nvml = AgentStartup.openNvml(c.nvmlLibrary(), c.fakeMachine());
        GpuHealth health = null;
        DriverSockets sockets = null;
        MpsSupervisor mps = null;
        try {
            NvmlInventory inv = NvmlDiscovery.builder().session(nvml).build().inventory(c.nodeName());
            NodeGpus gpus = new NodeGpus(inv);
            Ledger ledger = Ledger.create(c.rules(), List.of(inv.node()));
            PreparedClaims claims = new PreparedClaims(ledger, wrap.apply(new DriverStateFile(c.stateFile(), c.nodeName())),
                    new CdiSpecs(c.cdiRoot()), new PlacementEdits(gpus.minors(), sharing));
            mps = c.sharing().supervisor(c.ticker()).orElse(null);
            if (mps != null) {
                mps.share(gpus.minors().keySet());
            }
            claims.restore();
            SlicePublisher slices = new SlicePublisher(client, c.nodeName(), gpus);
            health = GpuHealth.start(nvml, (uuid, h) -> {
                if (gpus.byUuid(uuid).isPresent()) {
                    ledger.setHealth(uuid, h);
                }
                try {
                    slices.setHealth(uuid, h);
                } catch (RuntimeException e) {
                    LOG.error("GPU {} is {}, but the ResourceSlice could not be published: {}", uuid, h, e.getMessage());
                }
            }, c.ticker(), c.recoverAfter());
            slices.start();
            ClaimPreparer preparer = new ClaimPreparer(client, c.nodeName(), gpus, claims, c.rules());
            RegistrationService registration = new RegistrationService(c.draSocket());
            sockets = new DriverSockets(c.draSocket(), c.registrationSocket())
                    .start(List.of(new DraServiceV1(preparer), new DraServiceV1beta1(preparer)), registration);
            ScheduledExecutorService timer = AgentStartup.timer("qgpu-dra-driver-health", health, c.recoveryCheckEvery(),
                    mps, c.sharing().mpsTickEvery());
            LOG.info("{} on node {}: {} GPU(s) published, {} prepared claim(s), sharing back end {}", DriverNames.DRIVER, c.nodeName(),
                    gpus.all().size(), claims.all().size(), sharing.backend().wireName());
            return new DraDriver(nvml, health, sockets, timer, claims, slices, registration, mps);
        } catch (IOException | RuntimeException e) {
            if (mps != null) {
                mps.close();
            }
            if (sockets != null) {
                sockets.close();
            }
            if (health != null) {
                health.close();
            }
            nvml.close();
            throw e;
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

    /** Stops serving and watching; the ResourceSlice stays published (a restart replaces it). Idempotent. */
    @Override
    public void close() {
        if (!closing.compareAndSet(false, true)) {
            return;
        }
        try {
            if (timer != null) {
                timer.shutdownNow();
            }
            sockets.close();
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
